"""KERNODECK_LOG_FORMAT=json: one JSON object per line, with the request id (echoed in
X-Request-ID), the account and the order where known; no secret in any line."""

import io
import json
import logging
import os
import subprocess
import sys

import pytest

from kernodeck.observability import logcontext
from kernodeck.observability.logformat import ContextFilter, JsonFormatter
from kernodeck.observability.tasks import task_log_context_bind, task_tag_with_request
from kernodeck.payments import tasks as payment_tasks
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def json_lines():
    """Every log line written during the test, as the JSON handler writes it."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)


def test_every_line_is_one_json_object_with_the_request_id_account_and_order(client, json_lines):
    customer = make_user()
    client.force_login(customer)

    response = client.get("/orders/KD-NOPE-NOPE/")

    assert response.status_code == 404
    request_id = response["X-Request-ID"]
    assert len(request_id) == 32
    lines = json_lines()
    assert lines, "the 404 is logged"
    mine = [line for line in lines if line.get("request_id") == request_id]
    assert mine
    line = mine[-1]
    assert line["level"] == "WARNING"
    assert line["logger"] == "django.request"
    assert "KD-NOPE-NOPE" in line["message"]
    assert line["user_id"] == customer.pk
    assert line["order"] == "KD-NOPE-NOPE"
    assert line["time"].endswith("+00:00")


def test_a_request_id_from_the_proxy_is_kept_and_a_bad_one_replaced(client):
    response = client.get("/gpus/", HTTP_X_REQUEST_ID="edge-7f3a-0001")
    assert response["X-Request-ID"] == "edge-7f3a-0001"

    response = client.get("/gpus/", HTTP_X_REQUEST_ID="bad id\r\nwith <html>")
    assert response["X-Request-ID"] != "bad id\r\nwith <html>"
    assert len(response["X-Request-ID"]) == 32


def test_a_task_enqueued_by_a_request_logs_with_that_request_id(json_lines):
    tokens = logcontext.bind(request_id="req-0001")
    try:
        task = payment_tasks.watch_network.s("bitcoin")
        task_tag_with_request("enqueued", task)
    finally:
        logcontext.unbind(tokens)
    assert task.id.startswith("req-0001~")

    # In the worker, later, with no request around:
    task_log_context_bind(task)
    logging.getLogger("kernodeck.test").info("watching")
    logcontext.unbind(task._kernodeck_log_tokens)

    line = json_lines()[-1]
    assert line["request_id"] == "req-0001"
    assert line["task"] == task.name


def test_secrets_never_reach_a_log_line(json_lines, settings):
    settings.KERNODECK_METRICS_TOKEN = "metrics-secret-token-0001"
    settings.KERNODECK_TRON_API_KEY = "tron-api-key-0002"
    log = logging.getLogger("kernodeck.test")

    log.warning("headers: Authorization: Bearer %s", "kd_abcdef0123456789")
    log.warning("GET https://api.example/rpc?apikey=hunter22secret&x=1")
    log.warning("dsn postgres://kd:pa55word-0003@db/kd")
    log.warning("configured %s and %s", settings.KERNODECK_METRICS_TOKEN, settings.SECRET_KEY)
    log.warning("tron key %s", settings.KERNODECK_TRON_API_KEY)
    try:
        raise RuntimeError(f"token={settings.KERNODECK_METRICS_TOKEN}")
    except RuntimeError:
        log.exception("failed")

    text = json.dumps(json_lines())
    for secret in (
        "kd_abcdef0123456789",
        "hunter22secret",
        "pa55word-0003",
        settings.KERNODECK_METRICS_TOKEN,
        settings.SECRET_KEY,
        settings.KERNODECK_TRON_API_KEY,
    ):
        assert secret not in text
    assert text.count("[redacted]") >= 7


def test_the_setting_switches_the_whole_process_to_json_and_text_stays_the_default():
    code = (
        "import logging, django; django.setup(); "
        "logging.getLogger('kernodeck.probe').warning('probe %s', 42)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.test_settings"}

    as_json = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "KERNODECK_LOG_FORMAT": "json"},
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(line) for line in as_json.stderr.splitlines()]
    assert {"level": "WARNING", "logger": "kernodeck.probe", "message": "probe 42"}.items() <= (
        lines[-1].items()
    )

    as_text = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert as_text.stderr.splitlines()[-1] == "probe 42"
