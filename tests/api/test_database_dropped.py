"""A dropped database connection answers 503 with Retry-After, never a bare 500.

On PostgreSQL the test's own backend is terminated from a second connection (what a
restart or `pg_terminate_backend` does), then the API is called on the dead connection."""

import psycopg
import pytest
from django.db import connection
from django.test import Client

from kernodeck.accounts import services as account_services
from tests.factories import make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def bearer():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set KERNODECK_DATABASE_URL=postgres://…")
    _token, raw = account_services.api_token_create(user=make_user(), name="t")
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}", raise_request_exception=False)


def _terminate_our_backend():
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        user=settings["USER"],
        dbname=settings["NAME"],
        password=settings["PASSWORD"] or None,
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.mark.parametrize(
    ("method", "path", "body", "says"),
    [
        ("get", "/api/v1/orders", None, "nothing was changed"),
        ("post", "/api/v1/ssh-keys", {"name": "k", "public_key": "x"}, "could not confirm"),
    ],
)
def test_a_dropped_connection_is_a_503_with_retry_after(bearer, method, path, body, says):
    bearer.get("/api/v1/auth/me")  # the token works on a live connection
    _terminate_our_backend()
    if method == "get":
        response = bearer.get(path)
    else:
        response = bearer.post(path, body, content_type="application/json")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert says in response.json()["detail"]
    # The next request gets a fresh connection and works.
    assert bearer.get("/api/v1/auth/me").status_code == 200
