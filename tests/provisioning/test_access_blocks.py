"""The order page's rental block speaks of the rental it shows (issue 23, item 14): the
access words follow the preparation and the token, and an order not paid (or cancelled)
never sends the customer to support for its dates."""

import pytest
from django.test import Client

from kernodeck.provisioning import services
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_operator, make_order, make_settled_order, make_ssh_key

pytestmark = pytest.mark.django_db(transaction=True)

NOTEBOOK = "The notebook listens on the machine only"
INFERENCE = "The inference server (an OpenAI-compatible API) listens on the machine only"
SERVICE = "The service listens on the machine only"
NEVER_TOKEN = "Never paste the token into a support ticket."
NEVER_KEY = "Never paste the API key into a support ticket."


def active(preparation, *, url="", token=""):
    order = make_settled_order(offer=make_offer(units_total=1), preparation=preparation)
    make_ssh_key(order.owner)
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)
    return services.rental_deliver(
        order=order,
        host="gpu7.example.org",
        port=22,
        user="kd-7q4m",
        url=url,
        token=token,
        actor=operator,
    )


def rental_html(order, language="en"):
    client = Client()
    client.force_login(order.owner)
    html = client.get(f"/orders/{order.reference}/", HTTP_ACCEPT_LANGUAGE=language)
    html = html.content.decode()
    return html[html.index('id="rental"') : html.index('id="timeline"')]


def test_a_notebook_speaks_of_the_notebook_and_its_token():
    order = active("notebook", url="http://127.0.0.1:8888/lab?token=nb-1", token="nb-1")

    html = rental_html(order)

    assert NOTEBOOK in html
    assert INFERENCE not in html
    assert "<dt>Token</dt>" in html
    assert NEVER_TOKEN in html


def test_an_inference_server_speaks_of_its_api_and_its_key_never_of_a_notebook():
    order = active("inference", url="http://127.0.0.1:8000/v1", token="sk-kd-2")

    html = rental_html(order)

    assert INFERENCE in html
    assert "notebook" not in html.lower()
    assert "<dt>API key</dt>" in html
    assert NEVER_KEY in html
    assert NEVER_TOKEN not in html
    spanish = rental_html(order, "es")
    assert "El servidor de inferencia (una API compatible con OpenAI)" in spanish
    assert "Nunca pegues la clave de API en una solicitud al soporte." in spanish
    assert "notebook" not in spanish.lower()


def test_a_rental_without_a_token_never_mentions_one():
    order = active("pytorch")

    html = rental_html(order)

    assert "Only you see these details." in html
    assert "token" not in html.lower()
    assert "API key" not in html
    assert "tunnel" not in html


def test_a_service_url_on_a_plain_preparation_is_not_called_a_notebook():
    order = active("python", url="http://127.0.0.1:9000/", token="t-3")

    html = rental_html(order)

    assert SERVICE in html
    assert NOTEBOOK not in html
    assert NEVER_TOKEN in html


@pytest.mark.parametrize(
    ("language", "starts", "ends"),
    [
        ("en", "when access is delivered, after payment", "7 days after the start"),
        ("es", "cuando se entregue el acceso, tras el pago", "7 días después del inicio"),
    ],
)
def test_an_unpaid_order_says_when_its_dates_come_and_never_to_ask_support(language, starts, ends):
    order = make_order(offer=make_offer(units_total=1), days=7)

    html = rental_html(order, language)

    assert starts in html
    assert ends in html
    assert "topic=dates" not in html


def test_a_cancelled_order_has_no_dates_at_all():
    order = make_order(offer=make_offer(units_total=1))
    settlement_orders.order_cancel(order=order, actor=order.owner)

    html = rental_html(order)

    assert "topic=dates" not in html
    assert "<dt>Starts</dt>" not in html
    assert "<dt>Ends</dt>" not in html


def test_a_paid_rental_waiting_for_access_still_offers_support_for_its_dates():
    order = make_settled_order(offer=make_offer(units_total=1))

    html = rental_html(order)

    assert "topic=dates" in html
    assert "after payment" not in html
