"""An operator delivers access in the desk; the customer sees it on the order file."""

import os
from pathlib import Path

import pytest

from kernodeck.settlement import orders as settlement_orders
from tests.browser.test_order_journey import sign_in
from tests.factories import make_offer, make_operator, make_order, make_ssh_key, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")


def shoot(page, name):
    """Screenshots at 1280 and 390 px when KERNODECK_SCREENSHOTS names a folder."""
    if not SHOTS:
        return
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_operator_delivers_access_and_the_customer_sees_it(live_server, new_context):
    offer = make_offer(gpu_model="H100 80 GB", units_total=2, preparations=("notebook",))
    customer = make_user(email="carla@example.org")
    make_ssh_key(customer)
    order = make_order(owner=customer, offer=offer, days=7, preparation="notebook")
    settlement_orders.order_settle(order=order, cause={"test": "browser"})
    operator = make_operator()

    desk = new_context(locale="en-GB").new_page()
    sign_in_staff(desk, live_server.url, operator.email)
    desk.goto(live_server.url + "/backoffice/rentals/")
    shoot(desk, "desk")
    desk.get_by_role("link", name=order.reference).click()
    desk.get_by_role("link", name="Start preparing").click()
    desk.get_by_label("Reason").fill("node ready")
    desk.get_by_label("I confirm this action").check()
    desk.get_by_role("button", name="Start preparing").click()
    desk.get_by_text("Start preparing: done").wait_for()
    desk.get_by_role("link", name="Deliver access").click()
    assert desk.get_by_label("Host").input_value() == f"{offer.slug}-01.invalid"
    desk.get_by_label("Host").fill("gpu1.example.org")
    desk.get_by_label("Port").fill("2222")
    desk.get_by_label("URL (notebook, inference)").fill("http://127.0.0.1:8888/lab")
    desk.get_by_label("Token or API key (stored encrypted)").fill("nb-token-42")
    desk.get_by_label("The machine is ready and the customer's key installed").check()
    shoot(desk, "deliver")
    desk.get_by_role("button", name="Deliver access and start the clock").click()
    desk.get_by_text(f"Access delivered for {order.reference}").wait_for()

    page = new_context(locale="en-GB").new_page()
    sign_in(page, live_server.url, customer.email)
    page.goto(f"{live_server.url}/orders/{order.reference}/")
    access = page.locator("#access")
    access.wait_for()
    user = "kd-" + order.reference.lower()[3:].replace("-", "")
    ssh = f"ssh -p 2222 {user}@gpu1.example.org"
    assert page.locator("#ssh-command").inner_text() == ssh
    assert page.locator("#tunnel-command").inner_text() == (
        f"ssh -N -L 8888:127.0.0.1:8888 -p 2222 {user}@gpu1.example.org"
    )
    text = access.inner_text()
    assert "gpu1.example.org" in text
    assert "2222" in text
    assert user in text
    assert "nb-token-42" in text
    order.refresh_from_db()
    rental = page.locator("#rental").inner_text()
    assert f"{order.starts_at:%Y-%m-%d %H:%M} UTC" in rental
    assert f"{order.ends_at:%Y-%m-%d %H:%M} UTC" in rental
    assert page.locator("#countdown").inner_text().startswith("6 d 23 h")
    assert page.locator(".stage.current .stage-label").inner_text() == "Access"
    assert access.get_by_role("button", name="Copy").count() >= 5
    shoot(page, "order-file")

    page.goto(f"{live_server.url}/orders/")
    assert f"ends {order.ends_at:%Y-%m-%d %H:%M} UTC" in page.locator("main").inner_text()


def sign_in_staff(page, base, email):
    page.goto(base + "/account/sign-in/")
    page.fill("input[name=email]", email)
    from tests.factories import PASSWORD

    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")
    page.wait_for_url("**/backoffice/")
