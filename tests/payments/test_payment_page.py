"""The payment page as its customer reads it: what the status poll changes once the payment
is decided, the wallet link, the declared page's support link, abandoned instructions."""

import pytest
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import urlencode

from kernodeck.payments import services
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
