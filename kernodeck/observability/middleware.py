"""Request id, `/metrics`, and the HTTP metrics, as three small middlewares."""

import time

from django.http import HttpResponse

from kernodeck.observability import exposition, logcontext, recording

UNMATCHED = "unmatched"


class RequestIdMiddleware:
    """Give every request an id (the proxy's X-Request-ID when it looks like one), bind it
    to the log lines written while answering, and echo it in X-Request-ID."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = logcontext.request_id_choose(request.META.get("HTTP_X_REQUEST_ID"))
        # Left bound after the response: Django logs 4xx and 5xx answers once the
        # middlewares are done. Django's request_finished clears it (apps.py).
        logcontext.bind(request_id=request.request_id, request=request)
        response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response


class MetricsMiddleware:
    """Answer /metrics before host validation and the HTTPS redirect (Prometheus scrapes an
    internal address over plain HTTP), for the token or the allowed addresses only."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path != exposition.METRICS_PATH:
            return self.get_response(request)
        status = exposition.access(request)
        if status == 404:
            return HttpResponse("Not found.\n", status=404, content_type="text/plain")
        if status != 200:
            return HttpResponse("Forbidden.\n", status=403, content_type="text/plain")
        if request.method not in ("GET", "HEAD"):
            return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
        return HttpResponse(exposition.render(), content_type=exposition.content_type())


def route_of(request) -> str:
    """The URL pattern that answered (`orders/<str:reference>/`), never the raw path: the
    label must not grow with every order reference or scanner's probe."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNMATCHED
    return match.route or match.view_name or UNMATCHED


class HttpMetricsMiddleware:
    """Count every answered request and its latency by route, method and status."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in KNOWN_METHODS else "other"
        recording.http_request_observe(
            route=route_of(request),
            method=method,
            status=response.status_code,
            seconds=time.perf_counter() - started,
        )
        return response


KNOWN_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
