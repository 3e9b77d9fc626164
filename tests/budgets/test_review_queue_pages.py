"""The review queue is paged, 50 cases a page, each list on its own, oldest first."""

import re

import pytest
from django.urls import reverse

from kernodeck.backoffice.views import REVIEW_PER_PAGE
from kernodeck.payments import review_selectors
from tests.budgets.data import build

pytestmark = pytest.mark.django_db


def _case_links(html: str) -> list[str]:
    return re.findall(r'href="/backoffice/review/intent/([0-9a-f-]{36})/"', html)


def _transfer_links(html: str) -> list[str]:
    return re.findall(r'href="/backoffice/review/transfer/(\d+)/"', html)


def test_cases_are_paged_fifty_at_a_time_oldest_first(client):
    data = build(200)  # 67 underpaid instructions, 20 unallocated transfers
    cases = [str(pk) for pk in review_selectors.review_intents().values_list("pk", flat=True)]
    assert len(cases) == 67 and REVIEW_PER_PAGE == 50
    client.force_login(data.operator)
    url = reverse("backoffice:review_queue")

    first = client.get(url).content.decode()
    assert _case_links(first) == cases[:50]
    assert "Payments waiting for a decision (67)" in first
    assert "Page 1 of 2" in first and "?page=2&amp;transfers_page=1" in first

    second = client.get(url, {"page": "2"}).content.decode()
    assert _case_links(second) == cases[50:]
    assert "Page 2 of 2" in second

    # Out-of-range or nonsense page numbers show a real page, never an error.
    assert _case_links(client.get(url, {"page": "999"}).content.decode()) == cases[50:]
    # Python reads "٣" as 3, past the end: the last page, like any number too high.
    assert _case_links(client.get(url, {"page": "٣"}).content.decode()) == cases[50:]
    assert _case_links(client.get(url, {"page": "abc"}).content.decode()) == cases[:50]
    # A NUL byte is refused at the edge (core's input layer), before the view.
    assert client.get(url, {"page": "-1\x00"}).status_code == 400

    # The transfers (20, one page) are listed whole on every page of cases.
    transfers = [
        str(pk) for pk in review_selectors.review_transfers().values_list("pk", flat=True)
    ]
    assert _transfer_links(second) == transfers
    assert "Transfers no payment could take (20)" in second
