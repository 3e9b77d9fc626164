"""The floor under everything: a raw WSGI hello-world, no Django, served by bench/run.py with
gunicorn under the same settings as `kernodeck serve` (gthread workers and threads, keepalive,
worker recycling from KERNODECK_WEB_MAX_REQUESTS)."""

BODY = b'{"status": "ok"}'


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "16")])
    return [BODY]
