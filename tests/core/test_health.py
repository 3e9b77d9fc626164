"""The probes answer before host validation and the HTTPS redirect."""

import pytest
from django.test import override_settings


@pytest.mark.django_db
def test_healthz_answers_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_reports_database_and_cache(client):
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok"}}


@pytest.mark.django_db
@override_settings(ALLOWED_HOSTS=["gpu.example.org"], SECURE_SSL_REDIRECT=True)
def test_probes_answer_a_balancer_that_uses_an_address_over_http(client):
    # The same request to a page is refused (unknown host), the probes are not.
    assert client.get("/", HTTP_HOST="10.0.0.7").status_code == 400
    assert client.get("/healthz", HTTP_HOST="10.0.0.7").status_code == 200
    assert client.get("/readyz", HTTP_HOST="10.0.0.7").status_code == 200


@pytest.mark.django_db
@override_settings(
    CACHES={
        "default": {
            # Nothing listens on the discard port: every cache call fails at once.
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
        }
    }
)
def test_readyz_is_503_when_the_cache_does_not_answer(client):
    response = client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["cache"] != "ok"
