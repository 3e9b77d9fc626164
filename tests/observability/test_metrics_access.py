"""/metrics is closed unless configured, and answers only with the token and from the
allowed addresses; what it answers parses as the Prometheus text format."""

import ipaddress
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.observability.helpers import TOKEN, scrape

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed(settings):
    settings.KERNODECK_METRICS_TOKEN = ""
    settings.KERNODECK_METRICS_ALLOW_NETWORKS = ()
    return settings


def test_without_token_or_addresses_metrics_do_not_exist(client, closed):
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 404


def test_the_token_opens_metrics_and_nothing_else_does(client, closed):
    closed.KERNODECK_METRICS_TOKEN = TOKEN

    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 403
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    names = {f.name for f in text_string_to_metric_families(response.content.decode())}
    assert {"kernodeck_payment_intents", "kernodeck_rentals", "kernodeck_watcher_healthy"} <= names
    assert "kernodeck_http_requests" in names


def test_an_allowed_address_opens_metrics_without_a_token(client, closed):
    closed.KERNODECK_METRICS_ALLOW_NETWORKS = (ipaddress.ip_network("10.1.0.0/16"),)

    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


def test_with_both_configured_a_scrape_needs_both(client, closed):
    closed.KERNODECK_METRICS_TOKEN = TOKEN
    closed.KERNODECK_METRICS_ALLOW_NETWORKS = (ipaddress.ip_network("10.1.0.0/16"),)

    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 403
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert client.get("/metrics", REMOTE_ADDR="10.9.0.1", **bearer).status_code == 403
    assert scrape(client, REMOTE_ADDR="10.1.2.3")


def test_metrics_answer_any_host_name_the_scraper_uses(client, closed):
    # Prometheus scrapes an internal address, not one of ALLOWED_HOSTS.
    closed.KERNODECK_METRICS_TOKEN = TOKEN
    assert scrape(client, HTTP_HOST="10.0.0.7:8000")


def test_django_start_up_does_not_import_prometheus_client():
    """The multiprocess mode is fixed when prometheus_client is first imported: `kernodeck
    serve` chooses it after Django has started, so start-up must not import it."""
    code = (
        "import sys, django; django.setup(); "
        "from django.urls import resolve; resolve('/'); "
        "print('prometheus_client' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={
            **__import__("os").environ,
            "DJANGO_SETTINGS_MODULE": "config.test_settings",
        },
    )
    assert result.stdout.strip() == "False", result.stderr
