"""One set of rules for every purpose (issue 19, item 1): what an attack found to differ
between orders, top-ups and extensions, each refused now, and nothing changed by the
refusal."""

from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from kernodeck.core.errors import Conflict, Throttled
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger.models import LedgerEntry
from kernodeck.orders.models import Order
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import PaymentIntent, Resolution
from kernodeck.settlement import topups as settlement_topups
from kernodeck.support import services as support_services
from kernodeck.support.models import Extension
from tests.factories import api_post, make_user
from tests.ledger.helpers import pay_topup
from tests.settlement.test_audit_trail import offered
from tests.support.helpers import active_rental, fund

pytestmark = pytest.mark.django_db(transaction=True)


def reviewer(*codenames):
    operator = make_user(staff=True)
    for codename in ("review_payment", *codenames):
        operator.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(operator)
    return client


def overpaid_topup():
    account = make_user()
    _topup, intent = settlement_topups.topup_create(
        account=account, amount_usd="100", method_code="usdt-tron"
    )
    pay_topup(intent, amount_base=300_000_000)  # 300 USDT for a 100 USD top-up
    return account, intent


def test_accepting_an_overpaid_top_up_needs_the_balance_permission_as_crediting_does(
    configured, fresh_rates
):
    account, intent = overpaid_topup()
    case = reverse("backoffice:intent_case", args=[intent.pk])
    decision = {"form": "decision", "action": "settle", "reason": "sent 300"}

    refused = reviewer().post(case, decision)

    assert refused.status_code == 403
    intent.refresh_from_db()
    assert intent.resolution == ""
    assert ledger_selectors.balance_available(account=account) == Decimal("0.00")
    assert not LedgerEntry.objects.filter(account=account).exists()

    accepted = reviewer("adjust_balance").post(case, decision)

    assert accepted.status_code == 302
    intent.refresh_from_db()
    assert intent.resolution == Resolution.SETTLED
    # Twice the nominal amount at most (the overpaid top-up's cap).
    assert ledger_selectors.balance_available(account=account) == Decimal("200.00")


def test_an_extension_offer_stops_at_the_watched_cap_as_an_order_does(
    configured, fresh_rates, settings
):
    settings.KERNODECK_THROTTLE_PAYMENT_CREATE = (1000, 3600)
    settings.KERNODECK_THROTTLE_PAYMENT_DECLARE = (1000, 3600)
    rental = active_rental()
    extension = offered(rental, days=2)
    for _ in range(settings.KERNODECK_MAX_WATCHED_INSTRUCTIONS):
        intent = support_services.extension_payment_create(
            extension=extension, method_code="usdt-tron", actor=rental.owner
        )
        payment_services.payment_intent_abandon(intent=intent, actor=rental.owner)

    with pytest.raises(Conflict, match="the most we can watch at once"):
        support_services.extension_payment_create(
            extension=extension, method_code="btc-bitcoin", actor=rental.owner
        )

    assert PaymentIntent.objects.filter(extension=extension).count() == (
        settings.KERNODECK_MAX_WATCHED_INSTRUCTIONS
    )


def test_extension_instructions_count_in_the_accounts_throttle(configured, fresh_rates, settings):
    settings.KERNODECK_THROTTLE_PAYMENT_CREATE = (2, 3600)
    rental = active_rental()
    extension = offered(rental, days=2)
    for _ in range(2):
        intent = support_services.extension_payment_create(
            extension=extension, method_code="usdt-tron", actor=rental.owner
        )
        payment_services.payment_intent_abandon(intent=intent, actor=rental.owner)

    with pytest.raises(Throttled):
        support_services.extension_payment_create(
            extension=extension, method_code="usdt-tron", actor=rental.owner
        )

    assert PaymentIntent.objects.filter(extension=extension).count() == 2


def declared_offer(owner=None):
    """A running rental's offer, crypto instructions asked for and declared paid."""
    rental = active_rental(owner=owner)
    extension = offered(rental, days=2)
    intent = support_services.extension_payment_create(
        extension=extension, method_code="btc-bitcoin", actor=rental.owner
    )
    payment_services.payment_intent_declare(intent=intent, actor=rental.owner)
    fund(rental.owner, extension.price_usd)
    return rental, extension, intent


def test_paying_an_offer_from_the_balance_after_i_have_paid_asks_then_closes_its_instructions(
    configured, fresh_rates, client
):
    rental, extension, intent = declared_offer()
    ends = Order.objects.get(pk=rental.pk).ends_at

    with pytest.raises(support_services.DeclaredExtensionPaymentPending) as asked:
        support_services.extension_pay_with_balance(extension=extension, actor=rental.owner)

    assert asked.value.status == 409
    assert "Confirm to pay from the balance anyway" in asked.value.message
    assert not LedgerEntry.objects.filter(kind="extension_charge").exists()
    assert Order.objects.get(pk=rental.pk).ends_at == ends
    intent.refresh_from_db()
    assert intent.closed_at is None

    # The ticket page says the risk, and its form carries the confirmation.
    client.force_login(rental.owner)
    page = client.get(
        reverse("support:detail", args=[extension.ticket_id]), HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()
    assert "You said you already sent a payment for this extension offer" in page
    assert 'name="declared_seen" value="yes"' in page
    url = reverse("support:extension_pay_with_balance", args=[extension.ticket_id, extension.pk])
    step = client.post(url, {"declared_seen": "yes"}, HTTP_ACCEPT_LANGUAGE="en")
    assert "You said you already sent a payment for this extension offer" in step.content.decode()
    assert Extension.objects.get(pk=extension.pk).status == "offered"
    paid = client.post(url, {"confirm": "yes", "declared_seen": "yes"})

    assert paid.status_code == 302
    extension.refresh_from_db()
    assert extension.status == "applied"
    assert LedgerEntry.objects.filter(kind="extension_charge").count() == 1
    intent.refresh_from_db()
    assert (intent.closed_reason, intent.closed_at is not None) == ("offer_paid", True)
    # Its payment page no longer shows where to send.
    shown = client.get(
        reverse("payments:detail", args=[intent.pk]), HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()
    assert "The extension offer is already paid, so these instructions were closed." in shown
    assert intent.address not in shown


def test_the_api_pays_a_declared_offer_from_the_balance_only_when_confirmed(
    configured, fresh_rates, api
):
    _rental, extension, intent = declared_offer(owner=api.user)
    path = f"/tickets/{extension.ticket_id}/extension/pay-with-balance"

    asked = api_post(api, path)
    refused_loose = api_post(api, path, {"confirm": "yes"})
    assert asked.status_code == 409
    assert refused_loose.status_code == 422
    assert not LedgerEntry.objects.filter(kind="extension_charge").exists()

    paid = api_post(api, path, {"confirm": True})

    assert paid.status_code == 200
    extension.refresh_from_db()
    assert extension.status == "applied"
    intent.refresh_from_db()
    assert intent.closed_reason == "offer_paid"
