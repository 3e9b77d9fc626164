"""The back-office on a phone (issue 12): the review queue, the provisioning desk, the fleet,
the ssh nodes, the support inbox and the outbox stack their tables into cards under 600 px,
so no page scrolls sideways at 390 px, in Spanish or English, with rows in every table.

Set KERNODECK_SCREENSHOTS to a folder to keep 1280 and 390 px screenshots of each page, and
KERNODECK_README_SCREENSHOTS to docs/screenshots to refresh the pictures README.md embeds.
"""

import os
from decimal import Decimal
from pathlib import Path

import pytest

from kernodeck.core import clock
from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import IntentStatus, PaymentIntent, Transfer
from kernodeck.provisioning import services as provisioning_services
from kernodeck.provisioning.models import Node
from kernodeck.support.models import Ticket
from tests.browser.test_balance_journey import sign_in
from tests.demo.conftest import demo_chains, simulator  # noqa: F401 (fixtures)
from tests.factories import make_offer, make_settled_order, make_ssh_key, make_user
from tests.payments.conftest import configured, fresh_rates  # noqa: F401 (fixtures)
from tests.support.helpers import problem_ticket

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")
README_SHOTS = os.environ.get("KERNODECK_README_SCREENSHOTS", "")
PHONE = {"width": 390, "height": 844}
NO_OVERFLOW = "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
# For the failure message: the elements whose content is wider than their box.
TOO_WIDE = (
    "() => [...document.querySelectorAll('body *')]"
    ".filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)"
    ".slice(-5).map(e => `${e.tagName}.${e.className} ${e.scrollWidth}/${e.clientWidth}`)"
)
FIRST_ROW_DISPLAY = (
    "() => getComputedStyle(document.querySelector('table.stack tbody tr')).display"
)


def shoot(page, name):
    """Screenshots at 1280 and 390 px when KERNODECK_SCREENSHOTS names a folder."""
    if not SHOTS:
        return
    size = page.viewport_size
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


def busy_backoffice():
    """Rows everywhere: rentals on the desk, ssh nodes (one with a long reason and an offered
    host key), tickets with long subjects, payments in review and an unallocated transfer."""
    automated = make_offer(units_total=0, gpu_model="NVIDIA H100 80GB SXM")
    for index in range(2):
        provisioning_services.node_create(
            name=f"h100-sxm-node-{index + 1}",
            offer=automated,
            gpu_count=4,
            host=f"10.20.30.{index + 1}",
            driver="ssh",
        )
    Node.objects.filter(name="h100-sxm-node-2").update(
        state="maintenance",
        state_reason="nvidia-smi saw 3 of 4 GPUs; GPU 2 fell off the bus (Xid 79) during "
        "the last inspection, so the node waits for a technician.",
        host_key_offered="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk9cTq8lJ0bq6n0d0cB3m6m0p6mNlq5"
        "Hk3Yk0cJ3Qz1",
    )
    customers = [
        make_user(email=f"a.very.long.customer.name.{n}@university.example.org") for n in range(3)
    ]
    make_ssh_key(customers[0])
    offer = make_offer(units_total=4, gpu_model="NVIDIA A100 80GB PCIe")  # operated by hand
    orders = [make_settled_order(owner=customer, offer=offer) for customer in customers]
    for order in orders:
        problem_ticket(
            owner=order.owner,
            order=order,
            subject="The training job crashes on the first step with CUDA out of memory",
        )
    demo_seed_catalog()
    owner = make_user(email="reviewed.customer@example.org")
    for method in ("btc-bitcoin", "usdt-tron"):
        order = order_services.order_register(
            owner=owner, offer="h100-80gb", days=7, units=1, preparation="pytorch"
        )
        intent = payment_services.payment_intent_create_for_order(
            order=order, method_code=method, actor=owner
        )
        PaymentIntent.objects.filter(pk=intent.pk).update(
            status=IntentStatus.UNDERPAID,
            review_reason="Received 0.00051234 of 0.00102468 BTC after the expiry; the "
            "customer says a second transfer follows.",
        )
    Transfer.objects.create(
        network="tron",
        txid="f" * 64,
        index=0,
        address="TXYZabcdefghijkmnopqrstuvwxyz12345",
        asset="USDT",
        amount_base=Decimal(123_456_789),
        confirmations=40,
        first_seen_at=clock.now(),
        last_seen_at=clock.now(),
        kind="unallocated",
    )
    return orders


def pages(base, orders):
    node = "h100-sxm-node-2"
    ticket = Ticket.objects.order_by("created_at").first()
    return {
        "backoffice-review": f"{base}/backoffice/review/",
        "backoffice-desk": f"{base}/backoffice/rentals/",
        "backoffice-desk-all": f"{base}/backoffice/rentals/?state=queued",
        "backoffice-rental": f"{base}/backoffice/rentals/{orders[0].reference}/",
        "backoffice-fleet": f"{base}/backoffice/fleet/",
        "backoffice-nodes": f"{base}/backoffice/nodes/",
        "backoffice-node": f"{base}/backoffice/nodes/{node}/",
        "backoffice-support": f"{base}/backoffice/support/",
        "backoffice-ticket": f"{base}/backoffice/support/{ticket.pk}/",
        "backoffice-outbox": f"{base}/backoffice/outbox/",
    }


# The pages whose wide tables become stacked cards on a phone.
STACKED = {
    "backoffice-review",
    "backoffice-desk",
    "backoffice-desk-all",
    "backoffice-fleet",
    "backoffice-nodes",
    "backoffice-support",
    "backoffice-outbox",
}


@pytest.mark.usefixtures("configured", "fresh_rates")
@pytest.mark.parametrize("locale", ["es-ES", "en-GB"])
def test_backoffice_tables_fit_a_phone(live_server, new_context, locale):
    orders = busy_backoffice()
    make_user(email="operator@example.org", staff=True, is_superuser=True)
    page = new_context(locale=locale, viewport=PHONE).new_page()
    sign_in(page, live_server.url, "operator@example.org")

    for name, url in pages(live_server.url, orders).items():
        page.goto(url)
        assert page.locator("main").is_visible()
        if name in STACKED:
            assert page.locator("table.stack tbody tr").count() > 0, name
            assert page.evaluate(FIRST_ROW_DISPLAY) == "block", name
        assert page.evaluate(NO_OVERFLOW), f"{name} scrolls sideways: {page.evaluate(TOO_WIDE)}"
        if name in STACKED:  # a real table again on a desktop
            page.set_viewport_size({"width": 1280, "height": 900})
            assert page.evaluate(FIRST_ROW_DISPLAY) == "table-row", name
            page.set_viewport_size(PHONE)
        shoot(page, f"{name}-{locale[:2]}")


@pytest.mark.skipif(not README_SHOTS, reason="set KERNODECK_README_SCREENSHOTS=docs/screenshots")
@pytest.mark.usefixtures("demo_chains")
def test_refresh_the_readme_screenshots(live_server, new_context):
    """README's pictures: the demo home page (Spanish), a demo payment's panel (English)."""
    folder = Path(README_SHOTS)
    page = new_context(locale="es-ES", viewport={"width": 1280, "height": 900}).new_page()
    page.goto(live_server.url + "/")
    page.screenshot(path=str(folder / "home.png"))

    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    user = make_user(email="ada@example.org")
    order = order_services.order_register(
        owner=user, offer="h100-80gb", days=7, units=1, preparation="pytorch"
    )
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=user
    )
    page = new_context(locale="en-GB", viewport={"width": 1280, "height": 900}).new_page()
    sign_in(page, live_server.url, "ada@example.org")
    page.goto(f"{live_server.url}/payments/{intent.pk}/")
    page.click("[data-demo-action=exact]")
    page.wait_for_load_state()
    page.locator("#status .badge.info").wait_for()
    # The status card and the panel below it, in page coordinates.
    box = page.evaluate(
        "() => { const a = document.querySelector('#status').getBoundingClientRect(),"
        " b = document.querySelector('#demo-panel').getBoundingClientRect();"
        " return {x: Math.min(a.left, b.left) - 8, y: Math.min(a.top, b.top) + window.scrollY - 8,"
        " width: Math.max(a.right, b.right) - Math.min(a.left, b.left) + 16,"
        " height: Math.max(a.bottom, b.bottom) - Math.min(a.top, b.top) + 16}; }"
    )
    page.screenshot(path=str(folder / "demo-panel.png"), full_page=True, clip=box)
