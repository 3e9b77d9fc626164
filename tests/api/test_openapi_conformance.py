"""Schemathesis against /api/v1/openapi.json, as a customer and as an operator: no 5xx,
and every answer is what the document says (status listed, JSON content, body matching
its schema).

Bounded (KERNODECK_SCHEMATHESIS_EXAMPLES per operation, 10 by default) so it stays well
under a minute; CI runs it with the rest of the suite on SQLite and on PostgreSQL.
"""

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi import checks as openapi_checks

from kernodeck.accounts import services as account_services
from tests.factories import make_offer, make_operator, make_order, make_user

EXAMPLES = int(os.environ.get("KERNODECK_SCHEMATHESIS_EXAMPLES", 10))
CHECKS = [
    schemathesis.checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
]


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """Django's test client does this too: the handler would otherwise close the test's
    database connection at each request (on PostgreSQL, mid-transaction)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(params=["customer", "operator"])
def bearer(db, request):
    """Both roles: a customer with an order, and an operator (the ops API's operations)."""
    customer = make_user()
    make_order(owner=customer, offer=make_offer(slug="h100"))
    user = customer if request.param == "customer" else make_operator()
    _token, raw = account_services.api_token_create(user=user, name="schemathesis")
    return {"Authorization": f"Bearer {raw}"}


# Loaded from the running application itself, as a client would fetch it.
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_api_answers_conform_to_its_document(case, bearer):
    case.call_and_validate(headers=bearer, checks=CHECKS)
