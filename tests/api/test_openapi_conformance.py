"""Schemathesis against /api/v1/openapi.json, as a customer and as an operator, with all its
checks: no 5xx, every answer is what the document says (status listed, JSON content, body
matching its schema, headers), schema-violating input refused, schema-valid input accepted
(except where SEMANTIC_INPUT says why not), auth not ignored, unsupported methods refused.

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

# Every check schemathesis has (`--checks all`), with one exception per operation below:
# "a schema-valid request is accepted" cannot hold where the input is checked against the
# database or a policy that JSON Schema cannot state. Each answers a 422 naming the field
# (tests/core/test_bad_input.py and the domains' tests hold those words).
SEMANTIC_INPUT = {
    ("POST", "/api/v1/quotes"): "the offer must be an active offer in the catalog",
    ("POST", "/api/v1/orders"): "the offer must be an active offer in the catalog",
    ("POST", "/api/v1/ops/nodes"): "the offer must exist; the name must be free",
    ("POST", "/api/v1/ssh-keys"): "the public key must parse as an OpenSSH key",
    (
        "POST",
        "/api/v1/auth/register",
    ): "the password policy (length, common, numeric, like the name)",
    ("POST", "/api/v1/tickets"): "texts must hold more than whitespace; the order must be yours",
    ("POST", "/api/v1/sizing"): "the architecture must be consistent (heads, head size, modules)",
}


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
    semantic = (case.method.upper(), case.path) in SEMANTIC_INPUT
    excluded = [openapi_checks.positive_data_acceptance] if semantic else []
    case.call_and_validate(headers=bearer, excluded_checks=excluded)
