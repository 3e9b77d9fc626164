"""Query budgets of the operators' and support's pages and of the ticket lists: the same
number of SQL queries with 10 and with 1 000 rentals, nodes and tickets (issue 27).

The budgets are the counts measured at 10 rows; a page that starts asking per row (per
rental, per node, per ticket or per message) fails at 1 000. Attachments are listed
without their bytes. The fleet's pages list every node (no pages): they are measured at 10
and 100 nodes (operations_data.NODES_AT_MOST), where a query per node shows as surely and
rendering stays cheap enough for CI.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.budgets.operations_data import build

pytestmark = pytest.mark.django_db

SIZES = [10, 1000]

CUSTOMER, OPERATOR, API, STAFF_API = "customer", "operator", "api", "staff-api"

# (who asks, path given the dataset, the most queries it may take)
ENDPOINTS = [
    # The desk: its rentals' allocations and their owners' SSH keys, one query each.
    (OPERATOR, lambda d: "/backoffice/rentals/", 7),
    (OPERATOR, lambda d: "/backoffice/rentals/?state=active", 7),
    (OPERATOR, lambda d: f"/backoffice/rentals/{d.rental.reference}/", 9),
    (OPERATOR, lambda d: "/backoffice/fleet/", 5),
    (OPERATOR, lambda d: "/backoffice/nodes/", 3),
    # the node page: session, account, node and its events (the rental steps shown read
    # their references in one more: 7), and its GPUs' use (the slots, the samples) 2 more
    (OPERATOR, lambda d: f"/backoffice/nodes/{d.node.name}/", 7),
    # The inbox lists tickets and "I can't sign in" requests; each thread is listed
    # without its attachments' bytes.
    (OPERATOR, lambda d: "/backoffice/support/", 5),
    (OPERATOR, lambda d: f"/backoffice/support/{d.ticket.pk}/", 11),
    # My tickets, 50 a page (with the count of them).
    (CUSTOMER, lambda d: "/support/", 4),
    (CUSTOMER, lambda d: "/support/?page=9999", 4),
    (CUSTOMER, lambda d: f"/support/{d.ticket.pk}/", 8),
    # Every ticket with its thread and its extension: tickets, messages, extensions.
    (API, lambda d: "/api/v1/tickets", 4),
    (API, lambda d: f"/api/v1/tickets/{d.ticket.pk}", 5),
    (STAFF_API, lambda d: "/api/v1/ops/rentals", 4),
    (STAFF_API, lambda d: "/api/v1/ops/rentals?state=active", 4),
    (STAFF_API, lambda d: "/api/v1/ops/nodes", 4),
]


def _headers(client, who, dataset) -> dict:
    if who == API:
        return {"HTTP_AUTHORIZATION": f"Bearer {dataset.token}"}
    if who == STAFF_API:
        return {"HTTP_AUTHORIZATION": f"Bearer {dataset.operator_token}"}
    client.force_login(dataset.operator if who == OPERATOR else dataset.customer)
    return {}


@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}rows")
def test_staff_pages_and_ticket_lists_keep_their_query_budget(client, size):
    dataset = build(size)
    failures = []
    for who, path, budget in ENDPOINTS:
        url = path(dataset)
        headers = _headers(client, who, dataset)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url, **headers)
        assert response.status_code == 200, (url, response.status_code)
        sql = [q["sql"] for q in queries.captured_queries]
        if len(sql) > budget:
            failures.append(f"{url}: {len(sql)} queries, budget {budget}\n" + "\n".join(sql))
        reading_bytes = [s for s in sql if '"data"' in s and "attachment" in s]
        if reading_bytes:
            failures.append(f"{url} reads attachments' bytes:\n" + "\n".join(reading_bytes))
    assert not failures, "\n\n".join(failures)
