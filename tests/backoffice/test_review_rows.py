"""The review queue's rows, made in one pass in the view (issue 27), are the HTML the
template made: in English and Spanish, payments for orders and top-ups, each state's
badge, the cases' links and stored words escaped."""

from datetime import timedelta

import pytest
from django.template import engines
from django.test import Client
from django.urls import reverse
from django.utils import translation

from kernodeck.core import clock
from kernodeck.payments import review_selectors, selectors
from kernodeck.payments.models import ChainState, IntentStatus, PaymentIntent, Transfer
from tests.budgets.data import build

pytestmark = pytest.mark.django_db

REVIEW = "/backoffice/review/"
NASTY = "<script>&\"'"

# The template's loops before the rows were made in the view.
TEMPLATE_INTENTS = """{% load i18n money payment_badges %}{% translate "Created" as label_created %}{% translate "Payment" as label_payment %}{% translate "For" as label_for %}{% translate "Customer" as label_customer %}{% translate "Status" as label_status %}{% translate "Why" as label_why %}{% for intent in intents %}<tr>
      <td data-label="{{ label_created }}">{{ intent.created_at|date:"Y-m-d H:i" }}</td>
      <td data-label="{{ label_payment }}"><a href="{{ intent.case_url }}">{{ intent.method }}</a></td>
      <td data-label="{{ label_for }}">{% if intent.order %}<code class="ref">{{ intent.order.reference }}</code>{% else %}{% blocktranslate with amount=intent.topup.amount_usd|money_figure %}Top-up of {{ amount }} USD{% endblocktranslate %}{% endif %}</td>
      <td data-label="{{ label_customer }}">{{ intent.owner.email }}</td>
      <td data-label="{{ label_status }}">{% intent_badge intent %}</td>
      <td data-label="{{ label_why }}">{{ intent.reason_text }}</td>
    </tr>{% endfor %}"""  # noqa: E501
TEMPLATE_TRANSFERS = """{% load i18n %}{% translate "First seen" as label_first_seen %}{% translate "Network" as label_network %}{% translate "Transaction" as label_transaction %}{% translate "Address" as label_address %}{% translate "Amount" as label_amount %}{% translate "Kind" as label_kind %}{% for t in transfers %}<tr>
      <td data-label="{{ label_first_seen }}">{{ t.first_seen_at|date:"Y-m-d H:i" }}</td><td data-label="{{ label_network }}">{{ t.network }}</td>
      <td data-label="{{ label_transaction }}"><a href="{{ t.case_url }}"><code>{{ t.txid|truncatechars:20 }}</code></a></td>
      <td data-label="{{ label_address }}"><code>{{ t.address|truncatechars:24 }}</code></td><td class="num" data-label="{{ label_amount }}">{{ t.amount_text }}</td>
      <td data-label="{{ label_kind }}"><span class="badge warn">{{ t.kind_label }}</span></td>
    </tr>{% endfor %}"""  # noqa: E501


def _queue():
    data = build(9)
    # A top-up's payment waits too, with a stored reason the watcher did not write.
    topup_intent = PaymentIntent.objects.filter(topup__isnull=False).first()
    PaymentIntent.objects.filter(pk=topup_intent.pk).update(
        status=IntentStatus.UNDERPAID, review_reason=NASTY
    )
    type(data.customer).objects.filter(pk=data.customer.pk).update(email=f"a{NASTY}@example.org")
    stray = Transfer.objects.filter(intent__isnull=True).first()
    Transfer.objects.filter(pk=stray.pk).update(
        txid=NASTY * 4, address="bc1q" + NASTY * 5, asset="XYZ"
    )
    return data


def _expected(language):
    with translation.override(language):
        intents = list(review_selectors.review_intents()[:50])
        for intent in intents:
            intent.case_url = reverse("backoffice:intent_case", args=[intent.pk])
            intent.reason_text = review_selectors.review_reason_display(intent)
        transfers = list(review_selectors.review_transfers()[:50])
        kinds = dict(Transfer._meta.get_field("kind").choices)
        for transfer in transfers:
            transfer.case_url = reverse("backoffice:transfer_case", args=[transfer.pk])
            transfer.kind_label = str(kinds.get(transfer.kind, transfer.kind))
            transfer.amount_text = review_selectors.transfer_amount_text(transfer)
        engine = engines["django"]
        return (
            engine.from_string(TEMPLATE_INTENTS).render({"intents": intents}),
            engine.from_string(TEMPLATE_TRANSFERS).render({"transfers": transfers}),
        )


def _bodies(html: str) -> list[str]:
    return [part.split("</tbody>", 1)[0] for part in html.split("<tbody>")[1:]]


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_review_rows_are_what_the_template_made(language):
    data = _queue()
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(data.operator)

    page = client.get(REVIEW)

    assert page.status_code == 200
    _chains, intents, transfers = _bodies(page.content.decode())
    assert (intents, transfers) == _expected(language)
    assert intents.count("<tr>") == 4
    assert transfers.count("<tr>") >= 1


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ['data-label="Why"', "Top-up of 100.00 USD", ">Under review<", "Underpaid by"]),
        (
            "es",
            ['data-label="Motivo"', "Recarga de 100,00 USD", ">En revisión<", "Underpaid by 10 %"],
        ),
    ],
)
def test_the_review_rows_read_in_the_operators_language_with_links(language, words):
    data = _queue()
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(data.operator)

    _chains, intents, transfers = _bodies(client.get(REVIEW).content.decode())

    for word in words:
        assert word in intents, word
    for intent in review_selectors.review_intents():
        assert f'href="{reverse("backoffice:intent_case", args=[intent.pk])}"' in intents
    for transfer in review_selectors.review_transfers():
        assert f'href="{reverse("backoffice:transfer_case", args=[transfer.pk])}"' in transfers
    assert "a&lt;script&gt;&amp;&quot;&#x27;@example.org" in intents
    assert "<td data-label" in intents and "<script>" not in intents + transfers
    assert "&lt;script&gt;&amp;&quot;&#x27;" in transfers


@pytest.mark.parametrize("language", ["en", "es"])
def test_every_kind_of_reason_and_state_is_what_the_template_made(language):
    """The rows are read as tuples (no model instance): a reversal, instructions closed
    before the money came, a refused allocation and a stored text read as the model's."""
    data = _queue()
    now = clock.now()
    first, second, third = list(
        PaymentIntent.objects.filter(status=IntentStatus.UNDERPAID).order_by("created_at")[:3]
    )
    PaymentIntent.objects.filter(pk=first.pk).update(
        exception="reversed", reversed_at=now, reversed_base=123456789
    )
    PaymentIntent.objects.filter(pk=second.pk).update(
        status=IntentStatus.CONFIRMED,
        review_reason=review_selectors.CLOSED_BEFORE + "order cancelled)",
        closed_at=now,
        closed_reason="order_cancelled",
    )
    PaymentIntent.objects.filter(pk=third.pk).update(
        status=IntentStatus.CONFIRMED,
        review_reason=review_selectors.NOT_ALLOCATED + "The order was cancelled.",
    )
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(data.operator)

    _chains, intents, transfers = _bodies(client.get(REVIEW).content.decode())

    assert (intents, transfers) == _expected(language)
    assert 'data-state="reversed"' in intents and 'data-state="confirmed"' in intents


def test_the_chain_watchers_cost_one_query_with_every_network_watched(
    settings, django_assert_num_queries
):
    """Each configured network's health is read from the states the page loads (it was a
    query per watched network) and says what network_healthy says."""
    settings.KERNODECK_BITCOIN_ESPLORA_URL = "https://esplora.example/api"
    settings.KERNODECK_LITECOIN_ESPLORA_URL = "https://ltc.example/api"
    settings.KERNODECK_ETHEREUM_RPC_URL = "https://eth.example"
    settings.KERNODECK_TRON_API_URL = "https://tron.example"
    settings.KERNODECK_SOLANA_RPC_URL = "https://sol.example"
    now = clock.now()
    ChainState.objects.create(network="bitcoin", last_success_at=now)
    ChainState.objects.create(network="litecoin", last_success_at=now - timedelta(days=1))
    ChainState.objects.create(network="ethereum", last_error_at=now)

    with django_assert_num_queries(1):
        states = selectors.chain_states()

    assert {item["network"]: item["healthy"] for item in states} == {
        network: selectors.network_healthy(network) for network in selectors.NETWORKS
    }
    assert [item["healthy"] for item in states[:3]] == [True, False, False]
