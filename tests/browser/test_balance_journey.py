import pytest

from kernodeck.demo.services import demo_seed_catalog
from kernodeck.ledger.models import TopUp
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base, email):
    page.goto(base + "/account/sign-in/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", PASSWORD)
    page.click("main form button[type=submit]")
    # Customers land on their account, operators on the back-office.
    page.wait_for_url(lambda url: url.endswith(("/account/", "/backoffice/")))


def test_top_up_operator_records_the_transfer_then_pay_an_order_from_the_balance(
    live_server, new_context, settings
):
    settings.KERNODECK_DEMO = True
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    make_user(email="ada@example.org")
    make_user(email="ops@example.org", staff=True, is_superuser=True)
    customer = new_context(locale="en-GB").new_page()
    sign_in(customer, live_server.url, "ada@example.org")

    customer.goto(live_server.url + "/balance/")
    customer.get_by_label("100 USD").check()
    customer.get_by_label("USDT on Tron (TRC-20)").check()
    customer.get_by_role("button", name="Get payment instructions").click()
    customer.wait_for_url("**/payments/*/")
    amount = customer.locator("#pay-amount").inner_text()
    customer.get_by_role("button", name="I have paid").click()
    customer.goto(live_server.url + "/balance/")
    assert customer.locator("#balance-available").inner_text() == "0.00 USD"
    assert "Pending confirmation, not available yet" in customer.content()

    intent = TopUp.objects.get().intents.get()
    operator = new_context(locale="en-GB").new_page()
    sign_in(operator, live_server.url, "ops@example.org")
    operator.goto(f"{live_server.url}/backoffice/review/intent/{intent.pk}/")
    operator.get_by_label("Transaction id").fill("ab" * 32)
    operator.get_by_label("Amount received (in the asset, e.g. 0.0123)").fill(amount)
    operator.locator("form:has(input[value=record]) textarea[name=reason]").fill(
        "seen on the explorer"
    )
    operator.get_by_role("button", name="Record the transfer").click()
    operator.get_by_text("Transfer recorded and reconciled.").wait_for()

    customer.goto(live_server.url + "/balance/")
    assert customer.locator("#balance-available").inner_text() == "100.00 USD"

    order = order_services.order_register(
        owner=intent.owner, offer="rtx-4090", days=7, units=1, preparation="python"
    )
    customer.goto(f"{live_server.url}/orders/{order.reference}/")
    customer.get_by_role("button", name=f"Pay {order.total_usd} USD from my balance").click()
    figures = customer.locator("#confirm-figures").inner_text()
    assert f"{100 - order.total_usd:.2f} USD" in figures
    customer.get_by_role("button", name=f"Pay {order.total_usd} USD from the balance").click()
    customer.get_by_text(f"Order {order.reference} is paid from your balance.").wait_for()

    customer.goto(live_server.url + "/balance/")
    statement = customer.locator("#statement").inner_text()
    assert "Top-up" in statement and "Order paid from the balance" in statement
    assert customer.locator("#balance-available").inner_text() == f"{100 - order.total_usd} USD"
