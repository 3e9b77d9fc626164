"""Probes for load balancers and orchestrators.

`/healthz` says the process is alive and touches nothing else; `/readyz` says the database
and the cache answer. Both are answered by the first middleware, before host validation
and the HTTPS redirect, because probes come from the balancer over plain HTTP with an
address for a host name.
"""

import logging

from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse

logger = logging.getLogger(__name__)

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"


def readiness() -> dict[str, str]:
    """Ask the database and the cache one trivial question each; "ok" or the reason."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        checks["database"] = "ok"
    except Exception as exc:  # any failure means "not ready"; the probe must answer
        logger.warning("readiness: database failed: %s", exc)
        checks["database"] = type(exc).__name__
    try:
        cache.set("kernodeck:readyz", "1", timeout=5)
        checks["cache"] = "ok" if cache.get("kernodeck:readyz") == "1" else "no answer"
    except Exception as exc:
        logger.warning("readiness: cache failed: %s", exc)
        checks["cache"] = type(exc).__name__
    return checks


class HealthMiddleware:
    """Answer the two probe paths at once; every other request goes on untouched."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == HEALTH_PATH:
            return JsonResponse({"status": "ok"})
        if request.path == READY_PATH:
            checks = readiness()
            ready = all(value == "ok" for value in checks.values())
            return JsonResponse(
                {"status": "ok" if ready else "unavailable", "checks": checks},
                status=200 if ready else 503,
            )
        return self.get_response(request)
