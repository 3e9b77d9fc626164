"""Query budgets: every page and API endpoint that lists or shows data answers within a
fixed number of SQL queries, the same with 10 and with 1 000 rows of each kind.

A budget that holds at 10 rows but not at 1 000 is an N+1 (a query per row). The budgets
are the counts measured at 10 rows, so a page that starts asking per row fails here.
"""

import pytest

from tests.budgets.data import build

pytestmark = pytest.mark.django_db

SIZES = [10, 1000]

CUSTOMER, OPERATOR, API = "customer", "operator", "api"

# (name, who asks, path given the dataset, the most queries it may take)
ENDPOINTS = [
    # Customer pages
    ("my-orders", CUSTOMER, lambda d: "/orders/", 4),
    ("my-orders-last-page", CUSTOMER, lambda d: "/orders/?page=9999", 4),
    ("order-file", CUSTOMER, lambda d: f"/orders/{d.order.reference}/", 7),
    (
        "order-confirm",
        CUSTOMER,
        lambda d: f"/orders/new/?offer={d.offer.slug}&days=7&units=1&preparation=pytorch",
        7,
    ),
    ("payment-page", CUSTOMER, lambda d: f"/payments/{d.intent.pk}/", 4),
    ("payment-status", CUSTOMER, lambda d: f"/payments/{d.intent.pk}/status/", 4),
    ("balance-page", CUSTOMER, lambda d: "/balance/", 8),
    ("balance-statement-last-page", CUSTOMER, lambda d: "/balance/?page=9999", 8),
    ("statement-csv", CUSTOMER, lambda d: "/balance/statement.csv", 3),
    # One more than its instructions: the transfers seen at them (issue 23, money seen).
    ("topup-page", CUSTOMER, lambda d: f"/balance/topups/{d.topup.pk}/", 5),
    ("account", CUSTOMER, lambda d: "/account/", 5),
    ("catalog", CUSTOMER, lambda d: "/gpus/", 7),
    # The configurator builds the catalog's own cache entry on a miss (availability once).
    ("configurator", CUSTOMER, lambda d: f"/gpus/{d.offer.slug}/", 7),
    (
        "configurator-summary",
        CUSTOMER,
        lambda d: f"/gpus/{d.offer.slug}/summary/?days=7&units=1",
        5,
    ),
    # Back-office
    ("review-queue", OPERATOR, lambda d: "/backoffice/review/", 7),
    ("review-queue-last-page", OPERATOR, lambda d: "/backoffice/review/?page=9999", 7),
    ("review-case", OPERATOR, lambda d: f"/backoffice/review/intent/{d.review_intent.pk}/", 5),
    (
        "transfer-case",
        OPERATOR,
        lambda d: f"/backoffice/review/transfer/{d.review_transfer.pk}/",
        4,  # with the candidate payments, one query
    ),
    ("outbox", OPERATOR, lambda d: "/backoffice/outbox/", 5),
    ("admin-ledger", OPERATOR, lambda d: "/backoffice/ledger/ledgerentry/", 7),
    # With the page's orders named by their reference (one query).
    ("admin-audit", OPERATOR, lambda d: "/backoffice/core/auditevent/", 10),
    ("admin-orders", OPERATOR, lambda d: "/backoffice/orders/order/", 8),
    ("admin-intents", OPERATOR, lambda d: "/backoffice/payments/paymentintent/", 8),
    ("admin-transfers", OPERATOR, lambda d: "/backoffice/payments/transfer/", 9),
    ("admin-topups", OPERATOR, lambda d: "/backoffice/ledger/topup/", 6),
    ("admin-tokens", OPERATOR, lambda d: "/backoffice/accounts/apitoken/", 5),
    # API
    ("api-orders", API, lambda d: "/api/v1/orders", 3),
    ("api-orders-offset", API, lambda d: "/api/v1/orders?offset=5&limit=100", 3),
    ("api-order", API, lambda d: f"/api/v1/orders/{d.order.reference}", 3),
    ("api-payment", API, lambda d: f"/api/v1/payments/{d.intent.pk}", 2),
    ("api-balance", API, lambda d: "/api/v1/balance", 3),
    ("api-topups", API, lambda d: "/api/v1/topups", 4),
    ("api-topups-offset", API, lambda d: "/api/v1/topups?offset=5&limit=100", 4),
    ("api-offers", API, lambda d: "/api/v1/offers", 5),
    ("api-payment-methods", API, lambda d: "/api/v1/payment-methods", 1),
    ("api-me", API, lambda d: "/api/v1/auth/me", 1),
]


def _sign_in(client, who, dataset) -> dict:
    """Sign the client in as `who`; returns the extra headers its requests carry."""
    if who == API:
        return {"HTTP_AUTHORIZATION": f"Bearer {dataset.token}"}
    client.force_login(dataset.operator if who == OPERATOR else dataset.customer)
    return {}


def _over_budget(client, dataset, django_assert_max_num_queries, who, path, budget):
    """Ask for the page within its budget; a refusal's message (with the queries), or None."""
    url = path(dataset)
    headers = _sign_in(client, who, dataset)
    try:
        with django_assert_max_num_queries(budget):
            response = client.get(url, **headers)
    except pytest.fail.Exception as exc:
        return f"{url}: {exc}"
    assert response.status_code == 200, (url, response.status_code)
    return None


@pytest.mark.parametrize("size", SIZES, ids=lambda n: f"{n}rows")
def test_every_page_and_endpoint_keeps_its_query_budget(
    client, settings, django_assert_max_num_queries, size
):
    """Built once per size (1 000 rows of each kind take seconds), then every endpoint.

    The catalog cache is off: the budgets are those of a cache miss, which comes every few
    seconds (tests/catalog/test_catalog_cache.py checks that a hit asks nothing)."""
    settings.KERNODECK_DEMO = True
    settings.KERNODECK_CATALOG_CACHE_SECONDS = 0
    dataset = build(size)
    failures = [
        message
        for _name, who, path, budget in ENDPOINTS
        if (
            message := _over_budget(
                client, dataset, django_assert_max_num_queries, who, path, budget
            )
        )
    ]
    assert not failures, "\n\n".join(failures)
