"""GET /payments/{id} says how much arrived and how much is still due, like the web page."""

import pytest
from django.test import Client

from kernodeck.accounts import services as account_services
from kernodeck.payments.models import IntentStatus
from tests.loopback import LoopbackServer
from tests.payments.test_watching import btc_intent, esplora_tx, serve, watch_once

pytestmark = pytest.mark.django_db


@pytest.fixture
def esplora(settings):
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


def owner_client(intent) -> Client:
    _token, raw = account_services.api_token_create(user=intent.owner, name="tests")
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def test_a_new_payment_has_received_nothing_and_owes_everything(configured, fresh_rates):
    intent = btc_intent()  # 970 USD at 97 000 USD/BTC = 0.01 BTC

    body = owner_client(intent).get(f"/api/v1/payments/{intent.pk}").json()

    assert body["received"] == "0"
    assert body["received_base_units"] == "0"
    assert body["received_usd"] == "0.00"
    assert body["outstanding"] == "0.01"
    assert body["outstanding_base_units"] == "1000000"
    assert body["outstanding_usd"] == "970.00"


def test_an_underpayment_reports_what_arrived_and_what_is_still_due(
    configured, fresh_rates, esplora
):
    intent = btc_intent()
    serve(esplora, intent, 800_000, [esplora_tx("aa" * 32, intent.address, 400_000)])
    watch_once()
    intent.refresh_from_db()
    assert intent.status == IntentStatus.DETECTED

    body = owner_client(intent).get(f"/api/v1/payments/{intent.pk}").json()

    assert body["status"] == "detected"
    assert body["received"] == "0.004"
    assert body["received_base_units"] == "400000"
    assert body["received_usd"] == "388.00"
    assert body["outstanding"] == "0.006"
    assert body["outstanding_base_units"] == "600000"
    assert body["outstanding_usd"] == "582.00"


def test_an_overpayment_owes_nothing(configured, fresh_rates, esplora):
    intent = btc_intent()
    serve(esplora, intent, 800_000, [esplora_tx("aa" * 32, intent.address, 1_500_000)])
    watch_once()

    body = owner_client(intent).get(f"/api/v1/payments/{intent.pk}").json()

    assert body["received_base_units"] == "1500000"
    assert body["received_usd"] == "1455.00"
    assert body["outstanding"] == "0"
    assert body["outstanding_usd"] == "0.00"
