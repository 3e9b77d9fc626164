"""The support inbox's rows, made once per page in the view (issue 27), read as the
template's own cells did: in English and in Spanish, with each case's link, and escaped."""

import pytest
from django.urls import reverse

from kernodeck.support.models import AccessRequest, Ticket
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
