"""The payment page as its customer reads it: what the status poll changes once the payment
is decided, the wallet link, the declared page's support link, abandoned instructions."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import urlencode

from kernodeck.core import clock
from kernodeck.orders.models import Order, PaymentState
from kernodeck.payments import services, vocabulary, watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, PaymentIntent
from tests.factories import make_offer, make_order

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
OOB = 'id="pay-expiry" hx-swap-oob="true" hidden'


def instructions(method="btc-bitcoin"):
    offer = make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}, units_total=50)
    order = make_order(offer=offer)
    return services.payment_intent_create_for_order(
        order=order, method_code=method, actor=order.owner
    )


def status_fragment(client, intent):
    return client.get(reverse("payments:status", args=[intent.pk]), **EN).content.decode()


# -- 7: the countdown goes once the payment is decided -----------------------------------


def test_the_status_poll_takes_the_countdown_away_once_the_payment_is_decided(
    client, configured, fresh_rates
):
    intent = instructions()
    client.force_login(intent.order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    assert 'id="pay-expiry"' in page and 'id="countdown"' in page
    assert OOB not in status_fragment(client, intent)  # still payable: the countdown stays

    PaymentIntent.objects.filter(pk=intent.pk).update(status=IntentStatus.ALLOCATED)

    fragment = status_fragment(client, intent)
    assert "Confirmed and allocated" in fragment
    assert OOB in fragment
    assert 'id="countdown"' not in fragment
    # nor does the wallet link stay to invite a second transfer
    assert 'id="wallet-link" hx-swap-oob="true" hidden' in fragment


def test_a_page_loaded_after_the_decision_has_no_countdown_and_no_stray_swap(
    client, configured, fresh_rates
):
    intent = instructions()
    PaymentIntent.objects.filter(pk=intent.pk).update(status=IntentStatus.ALLOCATED)
    client.force_login(intent.order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    assert 'id="countdown"' not in page and "hx-swap-oob" not in page


# -- 8: the payment URI as a link, for a phone that cannot scan its own screen -----------


@pytest.mark.parametrize(
    ("method", "scheme"),
    [
        ("btc-bitcoin", "bitcoin:"),
        ("ltc-litecoin", "litecoin:"),
        ("eth-ethereum", "ethereum:"),
        ("usdc-ethereum", "ethereum:"),
        ("sol-solana", "solana:"),
    ],
)
def test_open_in_wallet_links_the_same_uri_as_the_qr_code(
    client, configured, fresh_rates, method, scheme
):
    intent = instructions(method)
    client.force_login(intent.order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    href = escape(intent.uri)
    assert intent.uri.startswith(scheme)
    assert f'<a class="button" id="open-wallet" href="{href}">Open in wallet</a>' in page


@pytest.mark.parametrize("method", ["usdt-tron", "trx-tron"])
def test_tron_has_no_payment_uri_so_no_wallet_link(client, configured, fresh_rates, method):
    intent = instructions(method)
    client.force_login(intent.order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    assert 'id="open-wallet"' not in page
    assert "The QR code holds the address only" in page


def test_no_wallet_link_once_the_instructions_cannot_be_paid(client, configured, fresh_rates):
    intent = instructions()
    services.payment_intent_abandon(intent=intent, actor=intent.order.owner)
    client.force_login(intent.order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    assert 'id="open-wallet"' not in page and "bitcoin:" not in page


# -- 12: after "I have paid", the way to support instead of a second transfer -------------


def test_the_declared_page_links_a_support_ticket_about_its_order(client, configured, fresh_rates):
    intent = instructions()
    order = intent.order
    client.force_login(order.owner)
    client.post(reverse("payments:declare", args=[intent.pk]))

    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    fragment = status_fragment(client, intent)

    query = urlencode(
        {
            "kind": "payment",
            "order": order.reference,
            "payment": intent.pk,
            "topic": "double-payment",
        }
    )
    link = f'<a href="{escape(reverse("support:new") + "?" + query)}">open a support ticket</a>'
    for html in (page, fragment):
        assert "Do not send a second one." in html
        assert link in html
        assert order.reference in html
    form = client.get(reverse("support:new") + "?" + query, **EN).content.decode()
    assert order.reference in form and "I already sent a transfer" in form


def test_the_support_link_is_in_spanish_by_default(client, configured, fresh_rates):
    intent = instructions()
    client.force_login(intent.order.owner)
    client.post(reverse("payments:declare", args=[intent.pk]))
    fragment = client.get(
        reverse("payments:status", args=[intent.pk]), HTTP_ACCEPT_LANGUAGE="es"
    ).content.decode()
    assert "abre una consulta al soporte</a> sobre el pedido" in fragment


# -- 13: abandoned and expired instructions say past times and the truth ------------------


def test_abandoned_instructions_show_when_they_were_abandoned_and_no_address_or_amount(
    client, configured, fresh_rates
):
    intent = instructions("usdt-tron")
    clock.freeze(intent.created_at + timedelta(minutes=5))
    services.payment_intent_abandon(intent=intent, actor=intent.order.owner)
    intent.refresh_from_db()
    client.force_login(intent.order.owner)

    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()

    assert f"{intent.abandoned_at:%Y-%m-%d %H:%M} UTC" in page
    assert f"{intent.expires_at:%Y-%m-%d %H:%M}" not in page.split('id="funds-note"')[0]
    assert "<dt>Expired</dt>" not in page  # the expiry is still to come: no "Expired <future>"
    assert "<dt>Abandoned</dt>" in page
    assert intent.address not in page
    assert "209.96" not in page and str(intent.amount_units) not in page
    assert "The address and the amount are no longer shown" in page
    note = (
        f"This address is still watched until {intent.monitor_until:%Y-%m-%d %H:%M} UTC. "
        f"An exact payment arriving there before {intent.expires_at:%Y-%m-%d %H:%M} UTC still "
        "settles the order by itself"
    )
    assert note in page
    assert "found and reviewed" not in page


def test_what_the_abandoned_page_says_is_what_the_watcher_does(configured, fresh_rates):
    """An exact payment to abandoned instructions, before their expiry, settles the order."""
    intent = instructions("usdt-tron")
    services.payment_intent_abandon(intent=intent, actor=intent.order.owner)
    intent.refresh_from_db()

    watching.transfer_record(
        ObservedTransfer(
            network=intent.chain,
            txid="ab" * 32,
            index=0,
            address=intent.address,
            asset=intent.method.asset,
            amount_base=intent.amount_units,
            confirmations=30,
        ),
        intent=intent,
    )
    watching.payment_intent_reconcile(intent_id=intent.pk)

    intent.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert Order.objects.get(pk=intent.order_id).payment_state == PaymentState.SETTLED


def test_expired_instructions_show_the_past_expiry_and_say_late_money_is_reviewed(
    client, configured, fresh_rates
):
    intent = instructions()
    clock.freeze(intent.expires_at + timedelta(minutes=3))
    watching.payment_intents_expire()
    client.force_login(intent.order.owner)

    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()

    assert f"<dt>Expired</dt><dd>{intent.expires_at:%Y-%m-%d %H:%M} UTC</dd>" in page
    assert intent.address not in page
    assert "Nothing arrived in time." in page
    assert "Money arriving there now comes after the expiry and goes to review" in page
    assert "settles the order by itself" not in page


def test_abandoned_then_expired_shows_both_past_times(client, configured, fresh_rates):
    intent = instructions()
    services.payment_intent_abandon(intent=intent, actor=intent.order.owner)
    intent.refresh_from_db()
    clock.freeze(intent.expires_at + timedelta(minutes=1))
    client.force_login(intent.order.owner)

    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()

    assert f"<dt>Abandoned</dt><dd>{intent.abandoned_at:%Y-%m-%d %H:%M} UTC</dd>" in page
    assert f"<dt>Expired</dt><dd>{intent.expires_at:%Y-%m-%d %H:%M} UTC</dd>" in page
    assert "comes after the expiry and goes to review" in page


def test_no_funds_note_once_the_address_is_no_longer_watched(client, configured, fresh_rates):
    intent = instructions()
    services.payment_intent_abandon(intent=intent, actor=intent.order.owner)
    intent.refresh_from_db()
    clock.freeze(intent.monitor_until + timedelta(minutes=1))
    assert vocabulary.funds_sent_note(intent) == ""
    client.force_login(intent.order.owner)
    page = client.get(reverse("payments:detail", args=[intent.pk]), **EN).content.decode()
    assert "still watched" not in page and "Abandoned." in page


def test_the_abandoned_note_is_in_spanish_by_default(client, configured, fresh_rates):
    intent = instructions()
    services.payment_intent_abandon(intent=intent, actor=intent.order.owner)
    client.force_login(intent.order.owner)
    page = client.get(
        reverse("payments:detail", args=[intent.pk]), HTTP_ACCEPT_LANGUAGE="es"
    ).content.decode()
    assert "sigue liquidando el pedido por sí solo" in page
    assert "<dt>Abandonado</dt>" in page and "<dt>Caducado</dt>" not in page


# -- issue 22: ether forwarded by a contract is not seen as a payment --------------------


@pytest.mark.parametrize(
    ("method", "language", "told"),
    [
        ("eth-ethereum", "en", "Send the ETH from an ordinary account"),
        ("eth-ethereum", "es", "Envía los ETH desde una cuenta normal"),
        ("usdt-ethereum", "en", None),  # a token transfer always emits its event
        ("btc-bitcoin", "en", None),
    ],
)
def test_eth_instructions_say_to_pay_from_an_ordinary_account_and_what_happens_otherwise(
    client, configured, fresh_rates, method, language, told
):
    intent = instructions(method)
    client.force_login(intent.order.owner)
    page = client.get(
        reverse("payments:detail", args=[intent.pk]), HTTP_ACCEPT_LANGUAGE=language
    ).content.decode()
    if told is None:
        assert 'id="ordinary-account"' not in page
        return
    assert told in page
    assert (
        "operator finds it when checking" if language == "en" else "un operador lo encuentra"
    ) in page
