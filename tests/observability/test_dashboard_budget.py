"""The dashboard and a metrics scrape answer in a fixed number of queries: the same with
10 and with 300 rows of every kind (tests/budgets' bulk data)."""

import pytest
from django.conf import settings

from tests.budgets.data import build
from tests.observability.helpers import scrape

pytestmark = pytest.mark.django_db

DASHBOARD_BUDGET = 30


def _queries(django_assert_max_num_queries, call) -> int:
    with django_assert_max_num_queries(DASHBOARD_BUDGET) as captured:
        call()
    return len(captured)


@pytest.mark.parametrize("size", [10, 300])
def test_the_dashboard_and_the_scrape_keep_their_query_budget(
    client, django_assert_max_num_queries, metrics_token, size
):
    dataset = build(size)
    client.force_login(dataset.operator)
    client.get("/backoffice/")  # with Redis the session is read from the cache from now on
    for days in (7, 90):
        count = _queries(
            django_assert_max_num_queries, lambda d=days: client.get(f"/backoffice/?days={d}")
        )
        assert count == EXPECTED_DASHBOARD - _session_from_cache(), (days, count)
    assert _queries(django_assert_max_num_queries, lambda: scrape(client)) == EXPECTED_SCRAPE


def _session_from_cache() -> int:
    """1 where a signed-in request reads its session from the cache, not a query."""
    return int(settings.SESSION_ENGINE == "kernodeck.accounts.cached_sessions")


# Measured at 10 rows with the database session store; a query per row shows as a larger
# count at 300.
EXPECTED_DASHBOARD = 23
EXPECTED_SCRAPE = 16
