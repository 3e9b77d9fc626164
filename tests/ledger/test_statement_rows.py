"""The balance statement's rows and the pending top-ups, made in one pass in the view
(issue 27), are the HTML the template made: in English and Spanish, every cause (an
order, a top-up, a payment, support), amounts written in the page's language and memos
escaped."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.paginator import Paginator
from django.template import engines
from django.test import Client
from django.urls import reverse
from django.utils import translation

from kernodeck.core import clock
from kernodeck.ledger import selectors
from kernodeck.ledger.models import EntryKind, LedgerEntry
from kernodeck.ledger.views import ENTRIES_PER_PAGE
from kernodeck.payments.models import PaymentIntent
from tests.budgets.data import build
from tests.factories import make_user

pytestmark = pytest.mark.django_db

NASTY = "<script>&\"'"

# The template's loop before the rows were made in the view.
TEMPLATE_ROWS = """{% load i18n money %}{% translate "Date" as l_date %}{% translate "What" as l_what %}{% translate "Cause" as l_cause %}{% translate "Amount" as l_amount %}{% translate "Balance" as l_balance %}{% for entry in entries %}<tr>
      <td data-label="#">{{ entry.sequence }}</td>
      <td data-label="{{ l_date }}">{{ entry.created_at|date:"Y-m-d H:i" }}</td>
      <td data-label="{{ l_what }}">{{ entry.get_kind_display }}{% if entry.memo %}<br><span class="muted small">{{ entry.memo }}</span>{% endif %}</td>
      <td data-label="{{ l_cause }}">{% if entry.order %}<a href="{% url 'orders:detail' entry.order.reference %}"><code class="ref">{{ entry.order.reference }}</code></a>{% elif entry.topup %}<a href="{% url 'ledger:topup' entry.topup.pk %}">{% translate "top-up" %}</a>{% elif entry.intent %}<a href="{% url 'payments:detail' entry.intent.pk %}">{% translate "payment" %}</a>{% else %}{% translate "support" %}{% endif %}</td>
      <td class="num" data-label="{{ l_amount }}">{{ entry.amount_usd|money_figure }}</td>
      <td class="num" data-label="{{ l_balance }}">{{ entry.balance_after_usd|money_figure }}</td>
    </tr>{% endfor %}"""  # noqa: E501
TEMPLATE_PENDING = """{% load i18n money %}{% for topup in topups %}<li><a href="{% url 'ledger:topup' topup.pk %}">{% blocktranslate with amount=topup.amount_usd|money_figure at=topup.created_at|date:"Y-m-d H:i" %}Top-up of {{ amount }} USD, {{ at }} UTC{% endblocktranslate %}</a></li>{% endfor %}"""  # noqa: E501


def _statement():
    data = build(6)
    customer = data.customer
    last = LedgerEntry.objects.filter(account=customer).order_by("-sequence").first()
    intent = PaymentIntent.objects.filter(owner=customer, order__isnull=True).first()
    now = clock.now()
    extra = [
        (EntryKind.ADJUSTMENT, Decimal("1234.5"), NASTY, None),
        (EntryKind.OVERPAYMENT_CREDIT, Decimal("0.01"), "", intent),
        (EntryKind.ADJUSTMENT, Decimal("-1000"), "", None),
    ]
    balance = last.balance_after_usd
    for i, (kind, amount, memo, cause) in enumerate(extra, start=1):
        balance += amount
        LedgerEntry.objects.create(
            account=customer,
            sequence=last.sequence + i,
            kind=kind,
            amount_usd=amount,
            balance_after_usd=balance,
            created_at=now + timedelta(minutes=i, seconds=59),
            memo=memo,
            intent=cause,
        )
    return customer


def _between(html: str, start: str, end: str) -> str:
    return html.split(start, 1)[1].split(end, 1)[0]


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_statement_and_pending_top_ups_are_what_the_template_made(language):
    customer = _statement()
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(customer)

    page = client.get(reverse("ledger:balance"))

    assert page.status_code == 200
    html = page.content.decode()
    rows = _between(html, "<tbody>", "</tbody>")
    pending = _between(html, "<ul>", "</ul>")
    with translation.override(language):
        entries = Paginator(selectors.statement(account=customer), ENTRIES_PER_PAGE).page(1)
        engine = engines["django"]
        expected_rows = engine.from_string(TEMPLATE_ROWS).render({"entries": entries})
        expected_pending = engine.from_string(TEMPLATE_PENDING).render(
            {"topups": selectors.topups_pending(account=customer)}
        )
    assert rows == expected_rows
    assert pending == expected_pending
    assert rows.count("<tr>") == 9
    assert pending.count("<li>") == 6


@pytest.mark.parametrize(
    ("language", "words"),
    [
        (
            "en",
            ['data-label="Cause"', ">support<", ">payment<", ">top-up<", "1,234.50", "-1,000.00"],
        ),
        (
            "es",
            [
                'data-label="Origen"',
                ">soporte<",
                ">pago<",
                ">recarga<",
                "1\xa0234,50",
                "-1\xa0000,00",
            ],
        ),
    ],
)
def test_the_statement_reads_in_the_customers_language_with_its_links(language, words):
    customer = _statement()
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(customer)

    rows = _between(client.get(reverse("ledger:balance")).content.decode(), "<tbody>", "</tbody>")

    for word in words:
        assert word in rows, word
    entries = LedgerEntry.objects.filter(account=customer).select_related("order")
    for entry in entries:
        if entry.order_id:
            assert reverse("orders:detail", args=[entry.order.reference]) in rows
        elif entry.topup_id:
            assert reverse("ledger:topup", args=[entry.topup_id]) in rows
        elif entry.intent_id:
            assert reverse("payments:detail", args=[entry.intent_id]) in rows
    assert '<span class="muted small">&lt;script&gt;&amp;&quot;&#x27;</span>' in rows
    assert "<script>" not in rows


def test_the_statements_pages_and_balance_are_the_querysets():
    """`statement_listed` reads by hand-written statements what `statement_rows` and
    `balance_available` read: every page, in order, and the sum of the entries."""
    customer = _statement()
    expected = list(selectors.statement_rows(account=customer))

    entries, available = selectors.statement_listed(account=customer)

    assert entries.count() == len(expected) == 9
    assert entries[0:100] == expected
    assert Paginator(entries, 4).get_page(2).object_list == expected[4:8]
    assert Paginator(entries, 4).get_page(9999).object_list == expected[8:]
    assert available == selectors.balance_available(account=customer)
    nobody = selectors.statement_listed(account=make_user())
    assert (nobody[0].count(), nobody[0][0:25], nobody[1]) == (0, [], Decimal("0.00"))
