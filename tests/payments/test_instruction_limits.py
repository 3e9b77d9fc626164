"""Defect 3 (issue 9): unlimited payment instructions. Instructions still watched are
capped per order and top-up, open top-ups per account, and creating instructions and
"I have paid" are throttled per account."""

from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.ledger.models import TopUp
from kernodeck.payments import services
from kernodeck.payments.models import PaymentIntent, Rate
from kernodeck.settlement import topups as settlement_topups
from tests.factories import api_post, make_offer, make_order

pytestmark = pytest.mark.django_db


def later_with_fresh_rates(hours):
    clock.freeze(clock.now() + timedelta(hours=hours))
    for asset, value in (("USDT", "1.0002"), ("BTC", "97000")):
        Rate.objects.create(
            asset=asset, usd_per_coin=value, source="kraken", fetched_at=clock.now()
        )


@pytest.fixture
def roomy_throttle(settings):
    """Throttles out of the way, to test the caps alone."""
    settings.KERNODECK_THROTTLE_PAYMENT_CREATE = (1000, 3600)
    settings.KERNODECK_THROTTLE_PAYMENT_DECLARE = (1000, 3600)
    return settings


def test_create_declare_abandon_cycles_stop_at_the_watched_cap(
    configured, fresh_rates, roomy_throttle
):
    order = make_order(offer=make_offer(units_total=10))
    for _ in range(5):
        intent = services.payment_intent_create_for_order(
            order=order, method_code="usdt-tron", actor=order.owner
        )
        services.payment_intent_declare(intent=intent, actor=order.owner)
        services.payment_intent_abandon(intent=intent, actor=order.owner)

    with pytest.raises(Conflict) as refused:
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )

    assert refused.value.status == 409
    assert str(refused.value) == (
        "This already has 5 recent payment instructions, the most we can watch at once; "
        "older ones stop being watched 24 hours after they expire. Pay with one of them, "
        "or contact support with the reference."
    )
    assert PaymentIntent.objects.filter(order=order).count() == 5
    # Once the old addresses leave the monitoring window, new instructions are possible.
    later_with_fresh_rates(25)
    services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )
    assert PaymentIntent.objects.filter(order=order).count() == 6


def test_the_cap_is_a_setting(configured, fresh_rates, roomy_throttle):
    roomy_throttle.KERNODECK_MAX_WATCHED_INSTRUCTIONS = 1
    order = make_order()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    services.payment_intent_abandon(intent=intent, actor=order.owner)

    with pytest.raises(Conflict, match="already has 1 recent payment instructions"):
        services.payment_intent_create_for_order(
            order=order, method_code="usdt-tron", actor=order.owner
        )


def test_open_top_ups_are_capped_per_account(api, configured, fresh_rates, roomy_throttle):
    bodies = [
        api_post(api, "/topups", {"amount_usd": "100", "method": "usdt-tron"}) for _ in range(4)
    ]

    assert [b.status_code for b in bodies] == [201, 201, 201, 409]
    assert bodies[3].json() == {
        "detail": "You already have 3 top-ups waiting for payment. Pay one of them, or wait "
        "until their instructions expire, before asking for another."
    }
    assert TopUp.objects.filter(account=api.user).count() == 3
    assert PaymentIntent.objects.filter(owner=api.user).count() == 3
    # Expired and no longer watched, they stop counting.
    later_with_fresh_rates(25)
    later = api_post(api, "/topups", {"amount_usd": "100", "method": "usdt-tron"})
    assert later.status_code == 201


def test_new_instructions_for_one_top_up_are_capped_too(configured, fresh_rates, roomy_throttle):
    roomy_throttle.KERNODECK_MAX_WATCHED_INSTRUCTIONS = 2
    topup, intent = settlement_topups.topup_create(
        account=make_order().owner, amount_usd="100", method_code="usdt-tron"
    )
    services.payment_intent_abandon(intent=intent, actor=topup.account)
    second = settlement_topups.topup_new_instructions(
        topup=topup, method_code="btc-bitcoin", actor=topup.account
    )
    services.payment_intent_abandon(intent=second, actor=topup.account)

    with pytest.raises(Conflict, match="already has 2 recent payment instructions"):
        settlement_topups.topup_new_instructions(
            topup=topup, method_code="btc-bitcoin", actor=topup.account
        )
    assert topup.intents.count() == 2


def test_creating_instructions_is_throttled_per_account(api, configured, fresh_rates, settings):
    settings.KERNODECK_THROTTLE_PAYMENT_CREATE = (3, 3600)
    settings.KERNODECK_MAX_OPEN_TOPUPS = 100
    created = [
        api_post(api, "/topups", {"amount_usd": "100", "method": "usdt-tron"}) for _ in range(3)
    ]
    order = make_order(owner=api.user)

    refused_topup = api_post(api, "/topups", {"amount_usd": "100", "method": "usdt-tron"})
    refused_order = api_post(api, f"/orders/{order.reference}/payments", {"method": "usdt-tron"})

    assert [c.status_code for c in created] == [201, 201, 201]
    assert refused_topup.status_code == 429
    assert refused_order.status_code == 429
    assert refused_order.json()["detail"].startswith(
        "You asked for many payment instructions in a short time. Try again in"
    )
    assert PaymentIntent.objects.filter(owner=api.user).count() == 3
    assert TopUp.objects.filter(account=api.user).count() == 3


def test_i_have_paid_is_throttled_per_account(api, configured, fresh_rates, settings):
    settings.KERNODECK_THROTTLE_PAYMENT_DECLARE = (2, 3600)
    intents = [
        settlement_topups.topup_create(
            account=api.user, amount_usd="100", method_code="usdt-tron"
        )[1]
        for _ in range(3)
    ]

    answers = [api_post(api, f"/payments/{i.pk}/declare") for i in intents]
    repeat = api_post(api, f"/payments/{intents[0].pk}/declare")

    assert [a.status_code for a in answers] == [200, 200, 429]
    assert repeat.status_code == 200  # declaring the same one again changes nothing
    intents[2].refresh_from_db()
    assert intents[2].declared_at is None
