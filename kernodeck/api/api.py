"""The JSON API at /api/v1: one NinjaAPI, the domains' routers, one error shape.

Every error answers {"detail": "<words a person understands>"} with a fitting status.
"""

import logging

from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from kernodeck.accounts.api import TokenAuth
from kernodeck.accounts.api import keys_router as ssh_keys_router
from kernodeck.accounts.api import router as accounts_router
from kernodeck.catalog.api import router as catalog_router
from kernodeck.core.errors import InvalidInput, ServiceError, Throttled
from kernodeck.ledger.api import router as ledger_router
from kernodeck.orders.api import router as orders_router
from kernodeck.payments.api import router as payments_router
from kernodeck.provisioning.api import router as ops_router
from kernodeck.sizing.api import router as sizing_router

logger = logging.getLogger(__name__)

api = NinjaAPI(
    title="Kernodeck API",
    version="1",
    description=(
        "Rent GPUs and pay in crypto or from a prepaid balance. Authenticate with "
        "`Authorization: Bearer <token>`; create a token on your account page or with "
        "`POST /api/v1/auth/token`. Amounts are decimal strings; errors are "
        '`{"detail": "..."}`.'
    ),
    auth=TokenAuth(),
    urls_namespace="api",
)
api.add_router("/auth", accounts_router)
api.add_router("/", catalog_router)
api.add_router("/", orders_router)
api.add_router("/", payments_router)
api.add_router("/", ledger_router)
api.add_router("/", sizing_router)
api.add_router("/", ssh_keys_router)
api.add_router("/ops", ops_router)


def _detail(request, message: str, status: int, headers: dict | None = None):
    response = api.create_response(request, {"detail": message}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _describe(error: dict) -> str:
    location = [
        str(part)
        for part in error.get("loc", ())
        if part not in {"body", "payload", "query", "path"}
    ]
    where = ".".join(location)
    message = error.get("msg", "is not valid")
    return f"{where}: {message}" if where else message


@api.exception_handler(ValidationError)
def on_validation_error(request, exc):
    return _detail(request, "; ".join(_describe(error) for error in exc.errors), 422)


@api.exception_handler(AuthenticationError)
def on_authentication_error(request, exc):
    return _detail(
        request,
        "Authentication required: send 'Authorization: Bearer <token>' with a valid, "
        "unrevoked API token.",
        401,
        {"WWW-Authenticate": "Bearer"},
    )


@api.exception_handler(Throttled)
def on_throttled(request, exc):
    return _detail(request, exc.message, exc.status, {"Retry-After": str(exc.retry_after)})


@api.exception_handler(ServiceError)
def on_service_error(request, exc):
    if isinstance(exc, InvalidInput) and exc.field:
        return _detail(request, f"{exc.field}: {exc.message}", exc.status)
    return _detail(request, exc.message, exc.status)


@api.exception_handler(HttpError)
def on_http_error(request, exc):
    return _detail(request, str(exc), exc.status_code)


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return _detail(request, "Not found.", 404)


@api.exception_handler(Exception)
def on_unexpected(request, exc):
    logger.exception("Unhandled error in %s %s", request.method, request.path)
    return _detail(request, "Internal server error. It has been logged.", 500)
