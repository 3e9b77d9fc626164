"""Request guards that run before any view: the edge of the input layer (core/inputs.py)."""

import json
import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.db import IntegrityError
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from kernodeck.core.inputs import nul_path

logger = logging.getLogger(__name__)


def is_api(request) -> bool:
    return request.path_info.startswith("/api/")


def refusal(request, message: str, status: int):
    """A 4xx answer in the caller's language: JSON `{"detail"}` for the API, else a page."""
    if is_api(request):
        return JsonResponse({"detail": message}, status=status)
    return render(request, "errors/input.html", {"message": message}, status=status)


def too_large(request):
    limit_kib = settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024
    return refusal(
        request,
        _("The request is too large: at most %(kib)d KiB.") % {"kib": limit_kib},
        413,
    )


def _nul_message(field: str) -> str:
    return _("%(field)s: contains a NUL byte, which is not allowed.") % {"field": field}


class InputGuardMiddleware:
    """Refuse NUL bytes anywhere (path, query, form, JSON) and bodies over the limit.

    PostgreSQL refuses NUL in text and a view would answer 500, so they stop here: 400
    naming the parameter for paths, queries and forms, 422 naming the field for JSON (the
    API's status for a bad field). Bodies over DATA_UPLOAD_MAX_MEMORY_SIZE answer 413.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self._check(request) or self.get_response(request)
        if response.status_code == 405 and is_api(request) and "Allow" in response:
            # django-ninja answers a wrong method in plain text; the API speaks JSON.
            allowed = response["Allow"]
            response = refusal(
                request,
                _("Method %(method)s is not allowed here; use %(allowed)s.")
                % {"method": request.method, "allowed": allowed},
                405,
            )
            response["Allow"] = allowed
        elif response.status_code == 405 and "Allow" in response and not response.content:
            # Django's require_POST answers an empty page: show the site's own instead.
            allowed = response["Allow"]
            response = render(request, "errors/405.html", status=405)
            response["Allow"] = allowed
        return response

    def _check(self, request):
        if "\x00" in request.path_info:
            return refusal(request, _("The address contains a NUL byte."), 400)
        try:
            for key, values in request.GET.lists():
                if "\x00" in key or any("\x00" in value for value in values):
                    return refusal(request, _nul_message(key.replace("\x00", "")), 400)
            if request.method in {"GET", "HEAD", "OPTIONS"}:
                return None
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            content_type = request.content_type or ""
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if limit is not None and length > limit and content_type != "multipart/form-data":
                return too_large(request)
            if content_type in {"application/x-www-form-urlencoded", "multipart/form-data"}:
                if is_api(request):
                    # The API reads the raw body after us. Django streams a multipart body
                    # into request.POST and it could not be read again: keep it in memory.
                    request.body  # noqa: B018
                for key, values in request.POST.lists():
                    if "\x00" in key or any("\x00" in value for value in values):
                        return refusal(request, _nul_message(key.replace("\x00", "")), 400)
            elif b"\x00" in request.body or b"\\u0000" in request.body:
                return self._check_json(request)
        except RequestDataTooBig:
            return too_large(request)
        except TooManyFieldsSent:
            return refusal(request, _("The request has too many fields."), 400)
        return None

    def _check_json(self, request):
        try:
            data = json.loads(request.body)
        except (ValueError, RecursionError):
            return refusal(request, _nul_message("body"), 400)
        field = nul_path(data)
        if field is None:
            return None
        return refusal(request, _nul_message(field), 422 if is_api(request) else 400)


class ConstraintConflictMiddleware:
    """The web's net under the services: an IntegrityError escaping a page's view is a 409.

    Services map the constraints they know to a precise Conflict; when one escapes anyway
    (a write lost a race that no service expected), the database refused it and the view's
    transaction rolled back, so nothing was saved: the visitor gets a page saying so, not a
    500. The API has its own net (api/api.py) and answers JSON.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, IntegrityError) or is_api(request):
            return None
        logger.warning("Constraint refused %s %s: %s", request.method, request.path, exception)
        return render(request, "errors/409.html", {"reload_url": _reload_url(request)}, status=409)


def _reload_url(request) -> str:
    """The page to look at again: the one the form was on (a POST's address may answer
    only POST), when it is on this site; else the address itself for a read."""
    referer = request.META.get("HTTP_REFERER", "")
    if referer and url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return referer
    return request.get_full_path() if request.method in {"GET", "HEAD"} else ""
