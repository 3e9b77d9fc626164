from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, Unavailable
from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import Order, PaymentState
from kernodeck.payments import services, watching
from kernodeck.payments.methods import METHODS
from kernodeck.payments.models import IntentStatus, PaymentIntent, PaymentMethod
from tests.factories import make_offer, make_order

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def order_of(total="210.00", **kwargs):
    offer = make_offer(prices={3: "100.00", 7: total, 30: "800.00"}, units_total=50)
    return make_order(offer=offer, **kwargs)


@pytest.mark.parametrize("method", [m.code for m in METHODS])
def test_every_method_gives_instructions_in_demo_mode(demo_mode, method):
    order = order_of()

    intent = services.payment_intent_create_for_order(
        order=order, method_code=method, actor=order.owner
    )

    assert intent.status == IntentStatus.PENDING
    assert intent.demo_wallet is True
    assert intent.rate_source == "demo"
    assert intent.amount_units > 0
    assert intent.expires_at == intent.created_at + timedelta(minutes=30)
    assert intent.monitor_until == intent.expires_at + timedelta(hours=24)
    assert intent.uri
    assert AuditEvent.objects.filter(
        action="payment.intent_created", target_id=str(intent.pk)
    ).exists()


def test_amount_is_total_over_rate_rounded_up(configured, fresh_rates):
    order = order_of(total="210.00")

    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )

    # 210 / 1.0002 = 209.958… -> 209.96 USDT = 209960000 base units (6 decimals).
    assert intent.amount_units == 209_960_000
    assert intent.rate_usd_per_coin == Decimal("1.0002")
    assert intent.amount_usd == Decimal("210.00")


def test_each_intent_takes_the_next_index_and_never_reuses_an_address(configured, fresh_rates):
    first_order, second_order = order_of(), order_of()
    first = services.payment_intent_create_for_order(
        order=first_order, method_code="eth-ethereum", actor=first_order.owner
    )
    # USDC shares Ethereum's sequence.
    second = services.payment_intent_create_for_order(
        order=second_order, method_code="usdc-ethereum", actor=second_order.owner
    )
    clock.freeze(first.expires_at + timedelta(seconds=1))
    watching.payment_intents_expire()
    for rate in fresh_rates.values():
        rate.fetched_at = clock.now()
        rate.save(update_fields=["fetched_at"])
    third = services.payment_intent_create_for_order(
        order=first_order, method_code="eth-ethereum", actor=first_order.owner
    )

    assert [first.derivation_index, second.derivation_index, third.derivation_index] == [0, 1, 2]
    assert len({first.address, second.address, third.address}) == 3
    first.refresh_from_db()
    assert first.status == IntentStatus.EXPIRED


def test_solana_intents_share_the_recipient_with_distinct_references_and_amounts(
    configured, fresh_rates
):
    a, b = order_of(), order_of()

    first = services.payment_intent_create_for_order(
        order=a, method_code="sol-solana", actor=a.owner
    )
    second = services.payment_intent_create_for_order(
        order=b, method_code="sol-solana", actor=b.owner
    )

    assert first.address == second.address
    assert first.solana_reference != second.solana_reference
    assert second.amount_units == first.amount_units + 1  # same total, made unique
    assert f"reference={second.solana_reference}" in second.uri


def test_stale_rate_is_refused_with_503_and_nothing_is_created(configured, fresh_rates, settings):
    order = order_of()
    clock.freeze(clock.now() + timedelta(seconds=settings.KERNODECK_RATE_MAX_AGE + 1))

    with pytest.raises(Unavailable, match="exchange rate is out of date"):
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )

    assert not PaymentIntent.objects.exists()
    order.refresh_from_db()
    assert order.payment_state == PaymentState.AWAITING_PAYMENT


def test_disabled_method_is_refused_with_409_and_nothing_is_created(configured, fresh_rates):
    PaymentMethod.objects.filter(code="btc-bitcoin").update(enabled=False)
    order = order_of()

    with pytest.raises(Conflict, match="not offered at the moment"):
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )

    assert not PaymentIntent.objects.exists()


def test_chain_without_a_key_outside_demo_is_refused(configured, fresh_rates, settings):
    settings.KERNODECK_XPUBS = {**settings.KERNODECK_XPUBS, "litecoin": ""}
    order = order_of()

    with pytest.raises(Conflict, match="not configured on this site"):
        services.payment_intent_create_for_order(
            order=order, method_code="ltc-litecoin", actor=order.owner
        )

    assert not PaymentIntent.objects.exists()


def test_a_live_intent_blocks_a_second_one_and_is_named(configured, fresh_rates):
    order = order_of()
    live = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )

    with pytest.raises(Conflict) as refused:
        services.payment_intent_create_for_order(
            order=order, method_code="ltc-litecoin", actor=order.owner
        )

    assert str(live.pk) in refused.value.message
    assert PaymentIntent.objects.count() == 1


@pytest.mark.parametrize("state", [PaymentState.SETTLED, PaymentState.CANCELLED])
def test_unpayable_order_is_refused(configured, fresh_rates, state):
    order = order_of()
    Order.objects.filter(pk=order.pk).update(payment_state=state)

    with pytest.raises(Conflict, match="cannot be paid"):
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )

    assert not PaymentIntent.objects.exists()


def test_declare_records_the_time_once_and_moves_no_money(configured, fresh_rates):
    order = order_of()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )

    services.payment_intent_declare(intent=intent, actor=order.owner)
    first = PaymentIntent.objects.get(pk=intent.pk).declared_at
    clock.freeze(clock.now() + timedelta(minutes=5))
    services.payment_intent_declare(intent=intent, actor=order.owner)

    intent.refresh_from_db()
    order.refresh_from_db()
    assert intent.declared_at == first
    assert intent.rescan_requested_at == first
    assert intent.status == IntentStatus.PENDING
    assert order.payment_state == PaymentState.AWAITING_PAYMENT
    assert AuditEvent.objects.filter(action="payment.declared").count() == 1


def test_abandon_lets_the_customer_choose_again_and_keeps_watching(configured, fresh_rates):
    order = order_of()
    first = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )

    services.payment_intent_abandon(intent=first, actor=order.owner)
    second = services.payment_intent_create_for_order(
        order=order, method_code="trx-tron", actor=order.owner
    )

    first.refresh_from_db()
    assert first.abandoned_at is not None
    assert first.monitor_until > clock.now()
    assert second.address != first.address


def test_payment_extends_a_short_hold_until_the_instructions_expire(
    configured, fresh_rates, settings
):
    settings.KERNODECK_ORDER_HOLD_SECONDS = 60
    order = order_of()

    intent = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )

    order.refresh_from_db()
    assert order.hold_until == intent.expires_at


def test_expiry_marks_only_pending_intents_past_their_expiry(configured, fresh_rates):
    order = order_of()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )

    assert watching.payment_intents_expire() == 0
    clock.freeze(intent.expires_at)
    assert watching.payment_intents_expire() == 1
    assert watching.payment_intents_expire() == 0


def test_manual_rate_is_recorded_with_who_and_when(db):
    from kernodeck.core.errors import InvalidInput
    from tests.factories import make_user

    operator = make_user(staff=True)
    rate = services.rate_record_manual(asset="btc", usd_per_coin="97123.45", actor=operator)

    assert (rate.asset, rate.usd_per_coin, rate.source, rate.entered_by) == (
        "BTC",
        Decimal("97123.45"),
        "manual",
        operator,
    )
    with pytest.raises(InvalidInput):
        services.rate_record_manual(asset="DOGE", usd_per_coin="1")
    with pytest.raises(InvalidInput):
        services.rate_record_manual(asset="BTC", usd_per_coin="-5")


def test_set_rate_command_prints_the_recorded_rate(db):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("set_rate", "eth", "3456.78", stdout=out)

    assert out.getvalue().startswith("ETH = 3456.78 USD (manual, ")


# -- web -------------------------------------------------------------------------------


def test_order_file_lists_methods_and_why_some_are_unavailable(client, configured, fresh_rates):
    PaymentMethod.objects.filter(code="ltc-litecoin").update(enabled=False)
    order = order_of()
    client.force_login(order.owner)

    page = client.get(reverse("orders:detail", args=[order.reference]), **EN).content.decode()

    assert 'value="usdt-tron"' in page
    assert "Not offered at the moment." in page


def test_choosing_a_method_opens_the_instructions_page(client, configured, fresh_rates):
    order = order_of()
    client.force_login(order.owner)

    response = client.post(reverse("order_pay", args=[order.reference]), {"method": "usdt-tron"})
    intent = PaymentIntent.objects.get()
    page = client.get(response.url, **EN).content.decode()

    assert response.url == reverse("payments:detail", args=[intent.pk])
    assert "Send USDT on Tron (TRC-20) only." in page
    assert intent.address in page
    assert "209.96" in page
    assert "<svg" in page
    assert 'id="countdown"' in page
    assert "I have paid" in page


def test_stale_rate_on_the_web_explains_and_keeps_the_order_viewable(
    client, configured, fresh_rates, settings
):
    order = order_of()
    client.force_login(order.owner)
    clock.freeze(clock.now() + timedelta(hours=1))

    response = client.post(
        reverse("order_pay", args=[order.reference]), {"method": "btc-bitcoin"}, follow=True, **EN
    )

    assert response.status_code == 200
    assert order.reference in response.content.decode()
    assert "exchange rate is out of date" in response.content.decode()
    assert not PaymentIntent.objects.exists()


def test_new_instructions_after_a_declared_payment_warn_first(client, configured, fresh_rates):
    order = order_of()
    client.force_login(order.owner)
    first = services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    services.payment_intent_declare(intent=first, actor=order.owner)
    services.payment_intent_abandon(intent=first, actor=order.owner)

    warning = client.post(
        reverse("order_pay", args=[order.reference]), {"method": "trx-tron"}, **EN
    )
    assert "You already declared a transfer" in warning.content.decode()
    assert order.reference in warning.content.decode()
    assert PaymentIntent.objects.count() == 1

    client.post(
        reverse("order_pay", args=[order.reference]),
        {"method": "trx-tron", "second_transfer_understood": "yes"},
    )
    assert PaymentIntent.objects.count() == 2


def test_declare_button_and_status_fragment(client, configured, fresh_rates):
    order = order_of()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )
    client.force_login(order.owner)

    client.post(reverse("payments:declare", args=[intent.pk]))
    fragment = client.get(reverse("payments:status", args=[intent.pk]), **EN).content.decode()

    assert "Declared by you, awaiting verification" in fragment
    assert "Do not send a second one." in fragment
    assert "<html" not in fragment


def test_abandoned_page_says_the_address_is_still_watched(client, configured, fresh_rates):
    order = order_of()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )
    client.force_login(order.owner)

    assert (
        "Abandon these instructions?"
        in client.get(reverse("payments:abandon", args=[intent.pk]), **EN).content.decode()
    )
    client.post(reverse("payments:abandon", args=[intent.pk]))
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()

    assert "This address is still watched until" in page
    assert "These instructions can no longer be paid." in page


@pytest.mark.parametrize("who", ["anonymous", "other", "staff", "owner"])
def test_payment_pages_permission_matrix(client, configured, fresh_rates, who):
    from tests.factories import make_user

    order = order_of()
    intent = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )
    if who == "other":
        client.force_login(make_user())
    elif who == "staff":
        client.force_login(make_user(staff=True))
    elif who == "owner":
        client.force_login(order.owner)

    pages = [
        client.get(reverse(name, args=[intent.pk])).status_code
        for name in ("payments:detail", "payments:status", "payments:abandon")
    ]
    declare = client.post(reverse("payments:declare", args=[intent.pk])).status_code
    pay = client.post(
        reverse("order_pay", args=[order.reference]), {"method": "ltc-litecoin"}
    ).status_code

    expected = {"anonymous": 302, "other": 404, "staff": 404, "owner": 200}[who]
    assert pages == [expected] * 3
    intent.refresh_from_db()
    if who == "owner":
        assert declare == 302 and intent.declared_at is not None
    else:
        assert declare in {302, 404} and intent.declared_at is None
        assert pay in {302, 404} and PaymentIntent.objects.count() == 1
