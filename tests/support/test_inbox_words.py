"""The support inbox's rows, made once per page in the view (issue 27), read as the
template's own cells did: in English and in Spanish, with each case's link, and escaped."""

import pytest
from django.urls import reverse
from django.utils import translation

from kernodeck.support.models import STAFF_STATUS_LABELS, AccessRequest, Kind, Ticket
from tests.budgets.operations_data import build

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("language", "words"),
    [
        (
            "en",
            [
                'data-label="Waiting since"',
                'data-label="Subject"',
                "(1\xa0minute)",
                '<span class="badge">Open</span>',
            ],
        ),
        (
            "es",
            [
                'data-label="En espera desde"',
                'data-label="Asunto"',
                "(1\xa0minuto)",
                '<span class="badge">Abierto</span>',
            ],
        ),
    ],
)
def test_the_inbox_reads_each_row_in_the_visitors_language(client, language, words):
    data = build(4)
    Ticket.objects.filter(pk=data.ticket.pk).update(subject="<b>Help</b> & more")
    AccessRequest.objects.update(name="<i>Lost</i>")
    client.force_login(data.operator)

    page = client.get("/backoffice/support/", HTTP_ACCEPT_LANGUAGE=language)

    assert page.status_code == 200
    html = page.content.decode()
    for word in words:
        assert word in html, word
    assert reverse("support_staff:ticket", args=[data.ticket.pk]) in html
    access = AccessRequest.objects.first()
    assert reverse("support_staff:access", args=[access.pk]) in html
    assert "&lt;b&gt;Help&lt;/b&gt; &amp; more" in html
    assert "&lt;i&gt;Lost&lt;/i&gt;" in html
    assert "<b>Help" not in html


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_inbox_rows_escape_every_value_read_as_a_column(client, language):
    """The rows are read as tuples (selectors.inbox_rows, access_requests_rows): each
    column lands in its cell, escaped (quotes included), in the visitor's language."""
    nasty = "<script>&\"'"
    data = build(4)
    ticket = Ticket.objects.select_related("owner", "order").get(pk=data.ticket.pk)
    Ticket.objects.filter(pk=ticket.pk).update(subject=nasty)
    type(ticket.owner).objects.filter(pk=ticket.owner_id).update(email=f"o{nasty}@example.org")
    access = AccessRequest.objects.first()
    AccessRequest.objects.filter(pk=access.pk).update(name=nasty, email=f"r{nasty}@example.org")
    client.force_login(data.operator)

    html = client.get("/backoffice/support/", HTTP_ACCEPT_LANGUAGE=language).content.decode()

    escaped = "&lt;script&gt;&amp;&quot;&#x27;"
    link = reverse("support_staff:ticket", args=[ticket.pk])
    assert f'<a href="{link}">{escaped}</a>' in html
    assert f">o{escaped}@example.org</td>" in html
    assert (
        f'<a href="{reverse("support_staff:access", args=[access.pk])}">r{escaped}@example.org'
        in html
    )
    assert f'data-label="{"Nombre" if language == "es" else "Name"}">{escaped}</td>' in html
    if ticket.order_id:
        assert f'<code class="ref">{ticket.order.reference}</code>' in html
    assert "<script>" not in html.split("<tbody>", 1)[1]
    with translation.override(language):
        kind, status = str(Kind(ticket.kind).label), str(STAFF_STATUS_LABELS[ticket.status])
    assert f">{kind}</td>" in html
    assert f'<span class="badge">{status}</span>' in html
