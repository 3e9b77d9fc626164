"""The back-office dashboard in a real browser: plots drawn, no CSP violation, nothing
scrolls sideways at 390 px, in Spanish and English, on a busy and on an empty shop.

Set KERNODECK_SCREENSHOTS to a folder to keep 1280 and 390 px screenshots.
"""

import os
from datetime import timedelta
from pathlib import Path

import pytest

from kernodeck.core import clock
from kernodeck.provisioning import services as provisioning_services
from tests.browser.test_backoffice_phone import NO_OVERFLOW, TOO_WIDE
from tests.browser.test_balance_journey import sign_in
from tests.browser.test_csp import _watch
from tests.factories import make_offer, make_settled_order, make_ssh_key, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")


def busy_shop():
    """Rentals settled and delivered over the last days on two offers."""
    staff = make_user(staff=True)
    now = clock.now()
    offers = [
        make_offer(units_total=8, gpu_model="NVIDIA H100 80GB"),
        make_offer(units_total=8, gpu_model="AMD MI300X"),
    ]
    for day in range(12, 0, -1):
        for index, offer in enumerate(offers):
            if (day + index) % 3:
                continue
            clock.freeze(now - timedelta(days=day))
            order = make_settled_order(offer=offer, units=1 + day % 2, days=3)
            make_ssh_key(order.owner)
            order.refresh_from_db()
            if order.rental_state != "queued":
                continue
            provisioning_services.rental_prepare(order=order, actor=staff)
            clock.freeze(now - timedelta(days=day) + timedelta(minutes=5 + 7 * day))
            provisioning_services.rental_deliver(
                order=order, host="gpu.example.org", port=22, user="kd-x", actor=staff
            )
    clock.freeze(None)


@pytest.mark.parametrize("busy", [True, False], ids=["busy", "empty"])
def test_the_dashboard_draws_its_plots_and_fits_a_phone(live_server, new_context, busy):
    if busy:
        busy_shop()
    make_user(email="boss@example.org", staff=True, is_superuser=True)
    for locale, language in (("es-ES", "es"), ("en-GB", "en")):
        page = new_context(locale=locale, viewport={"width": 1280, "height": 900}).new_page()
        violations = _watch(page)
        sign_in(page, live_server.url, "boss@example.org")
        assert page.goto(live_server.url + "/backoffice/?days=30").status == 200
        assert page.locator("html").get_attribute("lang") == language
        assert page.locator("svg.kd-svg").count() == (4 if busy else 0)
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate(NO_OVERFLOW), (language, width, page.evaluate(TOO_WIDE))
            if busy:
                box = page.locator("svg.kd-svg").first.bounding_box()
                assert box["width"] > 300 and box["height"] > 120
            if SHOTS:
                name = f"dashboard-{'busy' if busy else 'empty'}-{language}-{width}.png"
                page.screenshot(path=str(Path(SHOTS) / name), full_page=True)
                if busy:
                    page.locator(".kd-plots .card").nth(3).screenshot(
                        path=str(Path(SHOTS) / name.replace(".png", "-plot.png"))
                    )
        page.locator("details.kd-numbers summary").first.click()
        assert page.locator("details.kd-numbers table").first.is_visible()
        assert violations == []
