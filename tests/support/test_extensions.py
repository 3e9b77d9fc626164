"""Extensions end to end: request, offer, payment from the balance or in crypto, applied;
and every refusal changes nothing."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import LedgerEntry
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders.models import Order
from kernodeck.payments import review_selectors
from kernodeck.payments.models import IntentStatus, Purpose
from kernodeck.support import services
from kernodeck.support.models import Extension, Ticket
from tests.factories import api_post, make_order, make_user
from tests.ledger.helpers import pay_topup
from tests.support.helpers import active_rental, fund, in_days, make_agent

# Extensions move a running rental's end: they need the provisioning app (rental_extend).
pytest.importorskip("kernodeck.provisioning.services")

# Real commits: the rental lifecycle's tasks run after commit, as in production.
pytestmark = pytest.mark.django_db(transaction=True)


def request_extension(order, *, days=5):
    return services.ticket_create(
        owner=order.owner,
        kind="extension",
        order=order.reference,
        subject="Five more days",
        body="The fine-tuning needs longer.",
        fields={"extra_days": str(days), "deadline": in_days(2).date().isoformat()},
    )


def offered(order, *, days=7, price=None, valid_days=2):
    ticket = request_extension(order, days=days)
    extension = ticket.extensions.get()
    return services.extension_offer(
        extension=extension,
        days=days,
        price_usd=price,
        valid_until=in_days(valid_days),
        actor=make_agent(),
    )


def _snapshot(order):
    order = Order.objects.get(pk=order.pk)
    return {
        "ends_at": order.ends_at,
        "balance": ledger_selectors.balance_available(account=order.owner),
        "entries": LedgerEntry.objects.filter(account=order.owner).count(),
        "extended_events": AuditEvent.objects.filter(action="order.rental_extended").count(),
    }


def test_offer_paid_from_the_balance_moves_the_end_and_charges_once():
    order = active_rental(days=7)
    ends = order.ends_at
    extension = offered(order, days=7)
    assert extension.status == "offered"
    assert extension.price_usd == Decimal("210.00")  # the sheet's 7-day unit price, 1 unit
    assert not extension.custom_price
    assert Order.objects.get(pk=order.pk).ends_at == ends  # nothing changes before payment

    fund(order.owner, "300.00")
    extension = services.extension_pay_with_balance(extension=extension, actor=order.owner)

    assert extension.status == "applied"
    assert extension.new_ends_at == ends + timedelta(days=7)
    order.refresh_from_db()
    assert order.ends_at == ends + timedelta(days=7)
    charge = LedgerEntry.objects.get(kind="extension_charge")
    assert charge.amount_usd == Decimal("-210.00")
    assert charge.extension == extension
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("90.00")
    labels = [e["action"] for e in order_selectors.order_timeline(order=order)]
    assert "order.extension_offered" in labels
    assert "order.rental_extended" in labels

    # Pressing again charges nothing more and moves nothing more.
    again = services.extension_pay_with_balance(extension=extension, actor=order.owner)
    assert again.status == "applied"
    assert LedgerEntry.objects.filter(kind="extension_charge").count() == 1
    assert Order.objects.get(pk=order.pk).ends_at == ends + timedelta(days=7)
    assert Ticket.objects.get(pk=extension.ticket_id).status == "answered"


def test_a_custom_price_and_days_outside_the_sheet():
    order = active_rental(days=3)
    extension = offered(order, days=5, price="99.5")
    assert extension.price_usd == Decimal("99.50")
    assert extension.custom_price
    sheet = services.extension_default_price(order=order, days=5)
    assert sheet == Decimal("166.67")  # 3-day price 100.00 / 3 * 5, rounded up


def test_declined_offer_changes_nothing_and_cannot_be_paid():
    order = active_rental()
    extension = offered(order)
    fund(order.owner, "500.00")
    before = _snapshot(order)
    extension = services.extension_decline(
        extension=extension, reason="No capacity next week.", actor=make_agent()
    )
    assert extension.status == "declined"
    with pytest.raises(Conflict):
        services.extension_pay_with_balance(extension=extension, actor=order.owner)
    assert _snapshot(order) == before


def test_expired_offer_changes_nothing():
    from kernodeck.core import clock

    order = active_rental()
    extension = offered(order, valid_days=1)
    fund(order.owner, "500.00")
    before = _snapshot(order)
    clock.freeze(in_days(2))
    with pytest.raises(Conflict) as refused:
        services.extension_pay_with_balance(extension=extension, actor=order.owner)
    assert "expired" in refused.value.message
    clock.freeze(None)
    assert _snapshot(order) == before
    assert Extension.objects.get(pk=extension.pk).status == "offered"


def test_unpaid_offer_without_balance_changes_nothing():
    order = active_rental()
    extension = offered(order)
    fund(order.owner, "10.00")
    before = _snapshot(order)
    with pytest.raises(Conflict) as refused:
        services.extension_pay_with_balance(extension=extension, actor=order.owner)
    assert "available balance is 10.00 USD" in refused.value.message
    assert _snapshot(order) == before
    assert Extension.objects.get(pk=extension.pk).status == "offered"


def test_an_ended_rental_is_not_charged():
    from kernodeck.provisioning import services as provisioning_services
    from tests.factories import make_operator

    order = active_rental()
    extension = offered(order)
    fund(order.owner, "500.00")
    provisioning_services.rental_end(order=order, actor=make_operator(), reason="done early")
    before = _snapshot(order)
    with pytest.raises(Conflict):
        services.extension_pay_with_balance(extension=extension, actor=order.owner)
    assert _snapshot(order) == before


def test_offer_input_is_checked():
    order = active_rental()
    extension = request_extension(order).extensions.get()
    agent = make_agent()
    for days in ["٣", "0", "91", "x", ""]:
        with pytest.raises(InvalidInput):
            services.extension_offer(
                extension=extension, days=days, valid_until=in_days(1), actor=agent
            )
    for price in ["-1", "0", "NaN", "1e9", "٣"]:
        with pytest.raises(InvalidInput):
            services.extension_offer(
                extension=extension, days=3, price_usd=price, valid_until=in_days(1), actor=agent
            )
    with pytest.raises(InvalidInput):
        services.extension_offer(extension=extension, days=3, valid_until=in_days(-1), actor=agent)
    assert Extension.objects.get(pk=extension.pk).status == "requested"


def test_extension_requests_need_a_running_paid_order_and_one_at_a_time():
    owner = make_user()
    unpaid = make_order(owner=owner)
    with pytest.raises(InvalidInput):
        request_extension(unpaid)
    order = active_rental(owner=owner)
    request_extension(order)
    with pytest.raises(Conflict):
        request_extension(order)
    assert Ticket.objects.filter(kind="extension").count() == 1


def test_offer_paid_in_crypto_through_the_watchers(demo_mode):
    order = active_rental()
    ends = order.ends_at
    extension = offered(order, days=3)
    intent = services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=order.owner
    )
    assert intent.purpose == Purpose.EXTENSION
    assert intent.extension == extension
    assert intent.amount_usd == Decimal("100.00")
    with pytest.raises(Conflict):  # live instructions already exist
        services.extension_payment_create(
            extension=extension, method_code="eth-ethereum", actor=order.owner
        )
    assert Order.objects.get(pk=order.pk).ends_at == ends

    intent = pay_topup(intent)  # a confirmed transfer, as a watcher records it

    assert intent.status == IntentStatus.ALLOCATED
    extension.refresh_from_db()
    assert extension.status == "applied"
    assert extension.paid_by_payment == intent
    assert Order.objects.get(pk=order.pk).ends_at == ends + timedelta(days=3)
    assert not LedgerEntry.objects.filter(kind="extension_charge").exists()


def test_a_crypto_payment_for_a_withdrawn_offer_goes_to_review(demo_mode):
    order = active_rental()
    ends = order.ends_at
    extension = offered(order, days=3)
    intent = services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=order.owner
    )
    services.extension_decline(extension=extension, reason="withdrawn", actor=make_agent())
    intent = pay_topup(intent)
    assert intent.status == IntentStatus.CONFIRMED
    assert "withdrawn" in intent.review_reason
    assert Order.objects.get(pk=order.pk).ends_at == ends


def test_api_shows_the_offer_and_pays_it(api):
    order = active_rental(owner=api.user)
    extension = offered(order, days=3)
    ticket_id = str(extension.ticket_id)
    data = api.get(f"/api/v1/tickets/{ticket_id}").json()
    assert data["extension"]["status"] == "offered"
    assert data["extension"]["price_usd"] == "100.00"
    refused = api_post(api, f"/tickets/{ticket_id}/extension/pay-with-balance")
    assert refused.status_code == 409
    fund(api.user, "100.00")
    paid = api_post(api, f"/tickets/{ticket_id}/extension/pay-with-balance")
    assert paid.status_code == 200
    assert paid.json()["extension"]["status"] == "applied"
    assert ledger_selectors.balance_available(account=api.user) == Decimal("0.00")


def test_another_customers_offer_cannot_be_paid(client):
    order = active_rental()
    extension = offered(order)
    intruder = make_user()
    fund(intruder, "500.00")
    client.force_login(intruder)
    url = reverse("support:extension_pay_with_balance", args=[extension.ticket_id, extension.pk])
    assert client.post(url).status_code == 404
    assert Extension.objects.get(pk=extension.pk).status == "offered"
    assert ledger_selectors.balance_available(account=intruder) == Decimal("500.00")


def test_web_flow_staff_offer_then_customer_pays(client):
    order = active_rental()
    ticket = request_extension(order, days=7)
    agent = make_agent()
    client.force_login(agent)
    case = reverse("support_staff:ticket", args=[ticket.pk])
    page = client.get(case)
    assert page.status_code == 200
    assert "Price sheet for 7 days: 210.00 USD" in page.content.decode()
    response = client.post(
        case,
        {
            "form": "offer",
            "offer-days": "7",
            "offer-price_usd": "",
            "offer-valid_until": in_days(2).strftime("%Y-%m-%dT%H:%M"),
        },
    )
    assert response.status_code == 302
    fund(order.owner, "210.00")
    client.force_login(order.owner)
    page = client.get(reverse("support:detail", args=[ticket.pk])).content.decode()
    assert "Pay 210.00 USD from my balance" in page
    extension = ticket.extensions.get()
    url = reverse("support:extension_pay_with_balance", args=[ticket.pk, extension.pk])
    step = client.post(url, HTTP_ACCEPT_LANGUAGE="en")  # the button opens the confirm step
    assert step.status_code == 200
    assert Extension.objects.get(pk=extension.pk).status == "offered"
    response = client.post(url, {"confirm": "yes"})
    assert response.status_code == 302
    order.refresh_from_db()
    page = client.get(reverse("support:detail", args=[ticket.pk])).content.decode()
    assert f"the rental now ends on {order.ends_at:%Y-%m-%d %H:%M} UTC" in page


def test_web_crypto_payment_of_an_offer_opens_its_instructions(client, demo_mode):
    order = active_rental()
    extension = offered(order, days=3)
    client.force_login(order.owner)
    page = client.get(reverse("support:detail", args=[extension.ticket_id])).content.decode()
    assert 'value="btc-bitcoin" checked' in page
    response = client.post(
        reverse("support:extension_pay", args=[extension.ticket_id, extension.pk]),
        {"method": "btc-bitcoin"},
    )
    intent = extension.intents.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("payments:detail", args=[intent.pk])
    page = client.get(response["Location"]).content.decode()
    assert f'Extension of order <span class="ref">{order.reference}</span>' in page
    assert Order.objects.get(pk=order.pk).ends_at == order.ends_at


def test_paid_extension_replans_the_reminders():
    from kernodeck.core import clock
    from kernodeck.notifications.models import OutboxMessage
    from kernodeck.notifications.reminders import rental_reminders_send

    order = active_rental(days=7)
    ends = order.ends_at
    extension = offered(order, days=3, valid_days=10)
    clock.freeze(ends - timedelta(hours=2))
    assert rental_reminders_send() == 1  # the 2-hour reminder of the old end
    fund(order.owner, "100.00")
    services.extension_pay_with_balance(extension=extension, actor=order.owner)
    new_end = ends + timedelta(days=3)
    assert Order.objects.get(pk=order.pk).ends_at == new_end
    assert rental_reminders_send() == 0  # 3 days left: nothing due yet
    clock.freeze(new_end - timedelta(hours=2))
    assert rental_reminders_send() == 1  # planned again from the new end
    keys = list(
        OutboxMessage.objects.filter(event="rental_reminder")
        .order_by("id")
        .values_list("dedupe_key", flat=True)
    )
    assert keys[-1].endswith(new_end.isoformat())


def test_crypto_payment_for_an_offer_already_paid_from_the_balance_goes_to_review(demo_mode):
    order = active_rental()
    ends = order.ends_at
    extension = offered(order, days=3)
    intent = services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=order.owner
    )
    fund(order.owner, "100.00")
    services.extension_pay_with_balance(extension=extension, actor=order.owner)
    intent.refresh_from_db()
    assert intent.closed_reason == "offer_paid"  # as an order's: "do not send" from now on
    intent = pay_topup(intent)  # the crypto transfer confirms afterwards
    assert intent.status != IntentStatus.ALLOCATED  # recorded, waits for an operator
    assert list(review_selectors.review_transfers()) == list(intent.transfers.all())
    assert Order.objects.get(pk=order.pk).ends_at == ends + timedelta(days=3)  # once
    assert LedgerEntry.objects.filter(kind="extension_charge").count() == 1
    # Re-running reconciliation for the crypto payment changes nothing more.
    from kernodeck.payments import watching

    watching.payment_intent_reconcile(intent_id=intent.pk)
    assert Order.objects.get(pk=order.pk).ends_at == ends + timedelta(days=3)


def test_balance_is_not_charged_while_a_crypto_payment_for_the_offer_is_seen(demo_mode):
    from kernodeck.payments import watching
    from kernodeck.payments.chains.base import ObservedTransfer

    order = active_rental()
    extension = offered(order, days=3)
    intent = services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=order.owner
    )
    seen = ObservedTransfer(
        network=intent.chain,
        txid="cd" * 32,
        index=0,
        address=intent.address,
        asset=intent.method.asset,
        amount_base=intent.amount_units,
        confirmations=0,
    )
    watching.transfer_record(seen, intent=intent)
    assert watching.payment_intent_reconcile(intent_id=intent.pk).status == IntentStatus.DETECTED
    fund(order.owner, "100.00")
    before = _snapshot(order)
    with pytest.raises(Conflict) as refused:
        services.extension_pay_with_balance(extension=extension, actor=order.owner)
    assert "We have already received a payment for this" in refused.value.message
    assert _snapshot(order) == before


@pytest.mark.parametrize(
    ("language", "short", "enough"),
    [
        ("en", "(1,500.00 USD) does not cover it", "Available balance: 2,500.00 USD."),
        ("es", "(1\u00a0500,00 USD) no lo cubre", "Saldo disponible: 2\u00a0500,00 USD."),
    ],
)
def test_the_offer_writes_the_available_balance_as_money(client, language, short, enough):
    order = active_rental()
    extension = offered(order, price=Decimal("2000.00"))
    fund(order.owner, "1500.00")
    client.force_login(order.owner)
    page = reverse("support:detail", args=[extension.ticket_id])

    assert short in client.get(page, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    fund(order.owner, "1000.00")
    assert enough in client.get(page, HTTP_ACCEPT_LANGUAGE=language).content.decode()
