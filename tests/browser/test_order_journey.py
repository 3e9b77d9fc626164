import pytest

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.orders.models import Order
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base, email):
    page.goto(base + "/account/sign-in/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")
    # Customers land on their account, staff on the back-office.
    page.wait_for_url(lambda url: url.endswith(("/account/", "/backoffice/")))


def test_configure_two_b200_units_register_find_and_cancel(live_server, new_context):
    demo_seed_catalog()
    make_user(email="ada@example.org")
    page = new_context(locale="en-GB").new_page()
    sign_in(page, live_server.url, "ada@example.org")

    page.goto(live_server.url + "/gpus/")
    page.get_by_role("link", name="B200 180 GB").click()
    page.get_by_label("7 days").check()
    page.get_by_label("Units", exact=True).fill("2")
    page.get_by_label("PyTorch").check()
    # The live summary (htmx) follows the inputs without a page load.
    summary = page.locator("#summary")
    summary.locator("#summary-gpus", has_text="4").wait_for()
    assert summary.locator("#summary-units").inner_text() == "2"
    assert summary.locator("#summary-total").inner_text() == "4,236.96 USD"

    page.get_by_role("button", name="Continue").click()
    page.get_by_role("heading", name="Confirm your order").wait_for()
    page.get_by_role("button", name="Register the order").click()
    page.wait_for_url("**/orders/KD-*/")
    order = Order.objects.get()
    assert (order.units, order.gpus, str(order.total_usd)) == (2, 4, "4236.96")
    assert "The rental has not started." in page.content()

    page.get_by_role("link", name="My orders").first.click()
    page.get_by_role("link", name=order.reference).click()
    page.get_by_role("link", name="Cancel this order").click()
    # Each button says what it does: cancel, or keep the order.
    assert page.get_by_role("link", name="Keep the order").is_visible()
    page.get_by_role("button", name="Cancel the order").click()
    page.get_by_text("Order cancelled").first.wait_for()

    order.refresh_from_db()
    assert order.payment_state == "cancelled"


def test_configurator_summary_works_with_javascript_off(live_server, new_context):
    demo_seed_catalog()
    page = new_context(locale="en-GB", java_script_enabled=False).new_page()

    page.goto(live_server.url + "/gpus/b200-180gb/")
    page.get_by_label("30 days").check()
    page.get_by_label("Units", exact=True).fill("3")
    page.get_by_role("button", name="Update summary").click()
    page.wait_for_load_state()

    assert page.locator("#summary-gpus").inner_text() == "6"
    assert page.locator("#summary-total").inner_text() == "23,868.00 USD"
