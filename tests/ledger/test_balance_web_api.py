import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import TopUp
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups
from tests.factories import api_post, make_offer, make_order, make_user
from tests.ledger.helpers import funded_account, pay_topup

pytestmark = pytest.mark.django_db
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def test_balance_page_shows_available_and_pending_apart(client, configured, fresh_rates):
    account = make_user()
    funded_account(account, "50", make_user(staff=True))
    settlement_topups.topup_create(account=account, amount_usd="500", method_code="usdt-tron")
    client.force_login(account)

    page = client.get(reverse("ledger:balance"), **EN).content.decode()

    assert '<p class="big-figure" id="balance-available">50.00 USD</p>' in page
    assert "Pending confirmation, not available yet" in page
    assert "500.00 USD in top-ups waiting" in page


def test_top_up_from_the_web_opens_its_payment_page(client, configured, fresh_rates):
    account = make_user()
    client.force_login(account)

    response = client.post(
        reverse("ledger:topup_create"), {"amount_usd": "100", "method": "usdt-tron"}
    )

    topup = TopUp.objects.get(account=account)
    intent = topup.intents.get()
    assert response.url == reverse("payments:detail", args=[intent.pk])
    page = client.get(response.url, **EN).content.decode()
    assert "Top-up of 100.00 USD" in page


def test_unknown_top_up_amount_on_the_web_is_refused(client, configured, fresh_rates):
    client.force_login(make_user())

    response = client.post(
        reverse("ledger:topup_create"), {"amount_usd": "150", "method": "usdt-tron"}
    )

    assert response.status_code == 422
    assert not TopUp.objects.exists()


def test_pay_with_balance_button_settles_the_order(client):
    account = make_user()
    funded_account(account, "100", make_user(staff=True))
    order = make_order(
        owner=account, offer=make_offer(prices={3: "32.40", 7: "73.33", 30: "275.40"})
    )
    client.force_login(account)

    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()
    assert "Pay 73.33 USD from my balance" in page
    step = client.post(reverse("pay_with_balance", args=[order.reference]), **EN)

    # Always a confirm step first: the amount and what remains; nothing is paid yet.
    text = step.content.decode()
    assert "<dt>Amount to pay</dt><dd>73.33 USD</dd>" in text
    assert "<dt>Available balance now</dt><dd>100.00 USD</dd>" in text
    assert "<dt>Balance left afterwards</dt><dd>26.67 USD</dd>" in text
    assert "Back to the order, pay nothing" in text
    assert "declared_seen" not in text
    # The reference in the heading never breaks at its hyphens (a nowrap element).
    assert (
        f'<h1>Pay order <code class="ref">{order.reference}</code> from your balance?</h1>' in text
    )
    assert f"<title>Pay order {order.reference} from your balance?" in text
    order.refresh_from_db()
    assert order.payment_state == "awaiting_payment"
    assert ledger_selectors.balance_available(account=account) == Decimal("100.00")

    client.post(reverse("pay_with_balance", args=[order.reference]), {"confirm": "yes"})

    order.refresh_from_db()
    assert order.payment_state == "settled"
    statement = client.get(reverse("ledger:balance"), **EN).content.decode()
    assert order.reference in statement


def test_statement_csv_agrees_with_the_page_and_the_api(api, configured, fresh_rates):
    account = api.user
    _topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    pay_topup(intent)
    order = make_order(
        owner=account, offer=make_offer(prices={3: "32.40", 7: "73.33", 30: "275.40"})
    )
    settlement_orders.order_pay_with_balance(order=order, actor=account)
    api.force_login(account)

    rows = list(
        csv.DictReader(io.StringIO(api.get(reverse("ledger:statement_csv")).content.decode()))
    )
    balance = api.get("/api/v1/balance").json()

    assert [(r["kind"], r["amount_usd"], r["balance_after_usd"]) for r in rows] == [
        ("topup_credit", "100.00", "100.00"),
        ("order_charge", "-73.33", "26.67"),
    ]
    assert rows[1]["cause"] == f"order {order.reference}"
    assert balance == {"available_usd": "26.67", "pending_topups_usd": "0.00"}


def test_top_up_api(api, configured, fresh_rates):
    created = api_post(api, "/topups", {"amount_usd": "2000", "method": "btc-bitcoin"})
    refused = api_post(api, "/topups", {"amount_usd": "250", "method": "btc-bitcoin"})
    listed = api.get("/api/v1/topups").json()
    balance = api.get("/api/v1/balance").json()

    assert created.status_code == 201
    body = created.json()
    assert (body["amount_usd"], body["status"]) == ("2000.00", "awaiting_payment")
    assert body["payment"]["method"] == "btc-bitcoin"
    assert refused.status_code == 422
    assert (
        refused.json()["detail"]
        == "amount_usd: Top-ups are exactly 100 USD, 500 USD, 2,000 USD, 10,000 USD."
    )
    assert listed["count"] == 1
    assert [t["id"] for t in listed["items"]] == [body["id"]]
    assert listed["items"][0]["payment"] == body["payment"]
    assert balance == {"available_usd": "0.00", "pending_topups_usd": "2000.00"}


def test_top_ups_are_listed_in_pages_newest_first(api):
    now = clock.now().replace(microsecond=0)
    mine = TopUp.objects.bulk_create(
        TopUp(account=api.user, amount_usd=Decimal("100"), created_at=now - timedelta(hours=h))
        for h in (3, 2, 1)
    )
    TopUp.objects.create(account=make_user(), amount_usd=Decimal("500"), created_at=now)

    first = api.get("/api/v1/topups?limit=2").json()
    second = api.get("/api/v1/topups?limit=2&offset=2").json()
    too_many = api.get("/api/v1/topups?limit=101")

    assert first["count"] == second["count"] == 3
    assert [t["id"] for t in first["items"]] == [str(mine[2].pk), str(mine[1].pk)]
    assert [t["id"] for t in second["items"]] == [str(mine[0].pk)]
    assert second["items"][0] == {
        "id": str(mine[0].pk),
        "amount_usd": "100.00",
        "status": "awaiting_payment",
        "created_at": (now - timedelta(hours=3)).isoformat().replace("+00:00", "Z"),
        "credited_at": None,
        "payment": None,
    }
    assert too_many.status_code == 422


def test_pay_with_balance_api_answers_409_with_available_and_needed(api):
    order = make_order(owner=api.user)
    funded_account(api.user, "10", make_user(staff=True))

    refused = api_post(api, f"/orders/{order.reference}/pay-with-balance")

    assert refused.status_code == 409
    assert refused.json()["available_usd"] == "10.00"
    assert refused.json()["needed_usd"] == f"{order.total_usd:.2f}"
    funded_account(api.user, "1000", make_user(staff=True))
    paid = api_post(api, f"/orders/{order.reference}/pay-with-balance")
    again = api_post(api, f"/orders/{order.reference}/pay-with-balance")
    assert paid.status_code == 200 and paid.json()["payment_state"] == "settled"
    assert again.status_code == 200
    assert (
        api.get("/api/v1/balance").json()["available_usd"]
        == f"{Decimal('1010') - order.total_usd:.2f}"
    )


def test_another_customers_top_up_is_404(client, configured, fresh_rates):
    topup, _intent = settlement_topups.topup_create(
        account=make_user(), amount_usd="100", method_code="usdt-tron"
    )
    client.force_login(make_user())

    assert client.get(reverse("ledger:topup", args=[topup.pk])).status_code == 404
    assert (
        client.post(
            reverse("ledger:topup_pay", args=[topup.pk]), {"method": "trx-tron"}
        ).status_code
        == 404
    )
