"""GPU use in a real browser (issue 26, item 3): the order file's and the node page's small
plots are drawn, nothing scrolls sideways at 390 px and no CSP rule is broken, in Spanish
and English.

Set KERNODECK_SCREENSHOTS to a folder to keep 1280 and 390 px screenshots.
"""

import os
from datetime import timedelta
from pathlib import Path

import pytest

from kernodeck.core import clock
from kernodeck.provisioning import services as provisioning_services
from kernodeck.provisioning.models import Node
from tests.browser.test_backoffice_phone import NO_OVERFLOW, TOO_WIDE
from tests.browser.test_balance_journey import sign_in
from tests.browser.test_csp import _watch
from tests.factories import make_offer, make_operator, make_settled_order, make_ssh_key, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")


def an_hour_of_samples(node, gpus):
    """One sample a minute for the last hour, with a gap of ten minutes on GPU 1."""
    now = clock.now()
    for minute in range(60, -1, -1):
        clock.freeze(now - timedelta(minutes=minute))
        samples = [
            {
                "index": index,
                "utilization_pct": float((minute * 7 + 40 * index) % 100),
                "memory_used_mib": 20000 + 300 * minute,
                "memory_total_mib": 81559,
                "temperature_c": 55.0 + index,
                "power_w": 380.5 if index == 0 else None,
            }
            for index in gpus
            if not (index == 1 and 20 <= minute < 30)
        ]
        provisioning_services.gpu_samples_record(node=node, samples=samples)
    clock.freeze(None)


def an_active_rental():
    staff = make_operator()
    offer = make_offer(units_total=1, gpus_per_unit=2, gpu_model="NVIDIA H100 80GB HBM3")
    clock.freeze(clock.now() - timedelta(hours=2))
    order = make_settled_order(owner=make_user(email="ada@example.org"), offer=offer, units=1)
    make_ssh_key(order.owner)
    provisioning_services.rental_allocate(order=order)
    provisioning_services.rental_prepare(order=order, actor=staff)
    provisioning_services.rental_deliver(
        order=order, host="gpu-01.example.org", port=22, user="kd-rental", actor=staff
    )
    clock.freeze(None)
    an_hour_of_samples(Node.objects.get(offer=offer), [0, 1])
    return order


def an_ssh_node():
    offer = make_offer(units_total=0, gpus_per_unit=1)
    node = provisioning_services.node_create(
        name="gpu-ssh-07", offer=offer, gpu_count=4, host="10.0.0.7", driver="ssh"
    )
    an_hour_of_samples(node, [0, 1, 2, 3])
    return node


def check(page, url, *, plots, name, language):
    violations = _watch(page)
    assert page.goto(url).status == 200
    assert page.locator("html").get_attribute("lang") == language
    assert page.locator("svg.gpu-plot").count() == plots
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate(NO_OVERFLOW), (language, width, page.evaluate(TOO_WIDE))
        box = page.locator("svg.gpu-plot").first.bounding_box()
        assert box["width"] > 200 and box["height"] > 50
        if SHOTS:
            stem = Path(SHOTS) / f"gpu-use-{name}-{language}-{width}"
            page.screenshot(path=f"{stem}.png", full_page=True)
            page.locator("#gpu-use").screenshot(path=f"{stem}-plots.png")
    assert violations == []


def test_the_order_file_and_the_node_page_draw_the_gpus_last_hour(live_server, new_context):
    order = an_active_rental()
    node = an_ssh_node()
    operator = make_operator()
    operator.email = "ops@example.org"
    operator.save(update_fields=["email"])
    for locale, language in (("es-ES", "es"), ("en-GB", "en")):
        context = new_context(locale=locale, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        sign_in(page, live_server.url, "ada@example.org")
        url = f"{live_server.url}/orders/{order.reference}/"
        check(page, url, plots=2, name="order", language=language)

        page = new_context(locale=locale, viewport={"width": 1280, "height": 900}).new_page()
        sign_in(page, live_server.url, "ops@example.org")
        url = f"{live_server.url}/backoffice/nodes/{node.name}/"
        check(page, url, plots=4, name="node", language=language)
