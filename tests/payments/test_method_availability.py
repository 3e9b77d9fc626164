"""GET /payment-methods reports availability as instruction creation decides it (one
function, payments.selectors.instructions_refusal): a method is `available` exactly when
new instructions for it would be given, and otherwise says why."""

from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.core.errors import ServiceError
from kernodeck.payments import selectors, services
from kernodeck.payments.methods import METHODS
from kernodeck.payments.models import ChainState, PaymentIntent, PaymentMethod, Rate
from tests.factories import make_offer, make_order

pytestmark = pytest.mark.django_db


def _stale_rates():
    Rate.objects.update(fetched_at=clock.now() - timedelta(hours=1))


def _btc_disabled():
    PaymentMethod.objects.filter(code="btc-bitcoin").update(enabled=False)


def _tron_down(settings):
    settings.KERNODECK_TRON_API_URL = "http://127.0.0.1:9/"
    ChainState.objects.create(
        network="tron",
        last_success_at=clock.now() - timedelta(hours=1),
        last_error_at=clock.now(),
        last_error="503",
    )


def _bitcoin_up(settings):
    settings.KERNODECK_BITCOIN_ESPLORA_URL = "http://127.0.0.1:9/"
    ChainState.objects.create(network="bitcoin", last_success_at=clock.now())


SITUATIONS = {
    "fresh": lambda settings: None,
    "a watcher up": _bitcoin_up,
    "stale rates": lambda settings: _stale_rates(),
    "a method switched off": lambda settings: _btc_disabled(),
    "a watcher down": _tron_down,
}


def _creation_refusal(method_code: str, offer) -> str | None:
    """The refusal of the web form's path (the order read first) and of the API's (the
    method, its rate and its network's state read by the locking statement): the same."""
    refusals = []
    for create in (_create_for_order, _create_for_reference):
        order = make_order(offer=offer)  # a new customer each time: no throttle
        try:
            create(order, method_code)
        except ServiceError as refused:
            refusals.append(refused.message)
        else:
            refusals.append(None)
    assert refusals[0] == refusals[1], (method_code, refusals)
    return refusals[0]


def _create_for_order(order, method_code):
    services.payment_intent_create_for_order(
        order=order, method_code=method_code, actor=order.owner
    )


def _create_for_reference(order, method_code):
    services.payment_intent_create_for_reference(
        owner=order.owner, reference=order.reference, method_code=method_code, actor=order.owner
    )


@pytest.mark.parametrize("situation", SITUATIONS)
def test_available_is_exactly_when_instructions_are_given(
    client, configured, fresh_rates, settings, situation
):
    SITUATIONS[situation](settings)
    listed = {m["code"]: m for m in client.get("/api/v1/payment-methods").json()}
    offer = make_offer(units_total=20)

    for spec in METHODS:
        refusal = _creation_refusal(spec.code, offer)
        assert listed[spec.code]["available"] is (refusal is None), (spec.code, refusal)
        assert bool(listed[spec.code]["reason"]) is (refusal is not None), spec.code


def test_stale_rates_make_every_method_unavailable_with_the_reason(
    client, configured, fresh_rates
):
    _stale_rates()

    listed = client.get("/api/v1/payment-methods", HTTP_ACCEPT_LANGUAGE="en").json()

    assert {m["available"] for m in listed} == {False}
    btc = next(m for m in listed if m["code"] == "btc-bitcoin")
    assert btc["reason"] == "No fresh exchange rate for BTC right now; try again in a few minutes."


def test_a_down_watcher_refuses_instructions_as_it_is_reported(
    client, configured, fresh_rates, settings
):
    _tron_down(settings)
    listed = {m["code"]: m for m in client.get("/api/v1/payment-methods").json()}

    assert listed["usdt-tron"]["available"] is False
    assert "cannot be watched right now" in listed["usdt-tron"]["reason"]
    with pytest.raises(ServiceError, match="cannot be watched right now") as refused:
        services.payment_intent_create_for_order(
            order=(order := make_order()), method_code="usdt-tron", actor=order.owner
        )
    assert refused.value.status == 503
    assert listed["btc-bitcoin"]["available"] is True
    order = make_order()
    with pytest.raises(ServiceError, match="cannot be watched right now") as refused:
        _create_for_reference(order, "usdt-tron")  # the state read by the locking statement
    assert refused.value.status == 503
    assert not PaymentIntent.objects.filter(order=order).exists()


def test_demo_mode_counts_its_on_demand_rates_as_at_hand(settings, configured, fresh_rates):
    _stale_rates()
    settings.KERNODECK_DEMO = True
    method = PaymentMethod.objects.get(code="btc-bitcoin")

    assert selectors.instructions_refusal(method, rate_ready=selectors.rate_at_hand("BTC")) is None


def test_a_network_is_health_checked_only_where_its_own_url_is_set(settings, configured):
    """`network_healthy` reads its network's URL only (not every network's settings): a
    stale state of a network without a URL, or a name no network has, is healthy."""
    _tron_down(settings)
    ChainState.objects.create(network="bitcoin", last_error_at=clock.now(), last_error="503")
    settings.KERNODECK_BITCOIN_RPC_URL = ""
    settings.KERNODECK_BITCOIN_ESPLORA_URL = ""

    assert selectors.network_healthy("tron") is False
    assert selectors.network_healthy("bitcoin") is True
    assert selectors.network_healthy("dogecoin") is True

    settings.KERNODECK_BITCOIN_RPC_URL = "http://127.0.0.1:9/"  # its own node: watched
    assert selectors.network_healthy("bitcoin") is False
