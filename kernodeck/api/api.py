"""The JSON API at /api/v1: one NinjaAPI, the domains' routers, one error shape.

Every error answers {"detail": "<words a person understands>"} with a fitting status, and
a refusal a program may want to tell apart also a stable `code` (e.g. "payments_seen").
"""

import functools
import inspect
import logging

from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError, InterfaceError, OperationalError, connection
from django.http import Http404
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError

from kernodeck.accounts.api import TokenAuth
from kernodeck.accounts.api import keys_router as ssh_keys_router
from kernodeck.accounts.api import router as accounts_router
from kernodeck.catalog.api import router as catalog_router
from kernodeck.core import idempotency
from kernodeck.core.errors import InvalidInput, ServiceError, Throttled, Unauthenticated
from kernodeck.core.middleware import too_large
from kernodeck.ledger.api import router as ledger_router
from kernodeck.orders.api import router as orders_router
from kernodeck.payments.api import router as payments_router
from kernodeck.provisioning.api import router as ops_router
from kernodeck.sizing.api import router as sizing_router
from kernodeck.support.api import router as support_router

logger = logging.getLogger(__name__)


class ErrorOut(Schema):
    detail: str
    code: str | None = None


# Error answers the document lists, and when each can happen (see docs/architecture.md).
ERRORS = {
    400: "Malformed request: a NUL byte in the address or a parameter.",
    401: "No valid API token: send `Authorization: Bearer <token>`.",
    403: "The token's account may not do this.",
    404: "No such object on your account.",
    409: (
        "The object's state does not allow this now (e.g. already settled, not enough "
        "units). `code` is `payments_seen` when money for it was already seen on chain and "
        'is being checked (new instructions then need `"different_payment": true`).'
    ),
    413: "The request body is over the size limit.",
    422: "A field is not valid; `detail` starts with its name.",
    429: "Too many attempts; wait for the `Retry-After` seconds.",
    503: (
        "A service this needs is unavailable (no fresh exchange rate, the database for a "
        "moment): try again after `Retry-After` seconds. For a write, `detail` says whether "
        "it is known that nothing was changed."
    ),
}


# Reads that can also answer 409: the state of the object decides (a calendar exists only
# once the rental has dates).
READS_WITH_CONFLICT = {("get", "/api/v1/orders/{reference}/calendar.ics")}

# Operations without a token that check an email and password instead: a wrong pair is a
# 401 (the same words as the sign-in page), with its own description in the document.
CREDENTIAL_CHECKS = {("post", "/api/v1/auth/token"): "The email or the password is not correct."}


def _possible_errors(path: str, method: str, operation: dict) -> list[int]:
    """The error statuses an operation can answer, from what it takes and does."""
    codes = [409] if (method, path) in READS_WITH_CONFLICT else []
    parameters = operation.get("parameters") or []
    body = "requestBody" in operation
    if parameters or body:
        codes += [400, 422]
    if operation.get("security"):
        codes += [401, 403]
    if (method, path) in CREDENTIAL_CHECKS:
        codes.append(401)
    if "{" in path:
        codes.append(404)
    codes.append(503)  # any operation: the database may drop for a moment
    if method in {"post", "put", "patch", "delete"}:
        codes += [409, 429]
    if body:
        codes.append(413)
    return sorted(set(codes))


def _carries_secrets(request) -> bool:
    """Answers to a token's requests (orders with access details, `GET /auth/me`, the ops
    API's access) and the token endpoints themselves (`POST /auth/token` answers a new
    token): no cache, proxy or browser may keep them."""
    return "HTTP_AUTHORIZATION" in request.META or request.path.startswith("/api/v1/auth/")


# No text the API takes may hold a NUL byte (core/inputs.py refuses it before any view):
# the document says so on every string and property name of its inputs.
NO_NUL = "^[^\\u0000]*$"


def _say_no_nul(node, components: dict, seen: set) -> None:
    """Add `NO_NUL` to every string (and every object's property names) under `node`,
    following `$ref`s into the components once each."""
    if isinstance(node, list):
        for item in node:
            _say_no_nul(item, components, seen)
        return
    if not isinstance(node, dict):
        return
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name not in seen and name in components:
            seen.add(name)
            _say_no_nul(components[name], components, seen)
        return
    if node.get("type") == "string" and not {"pattern", "enum", "const", "format"} & set(node):
        node["pattern"] = NO_NUL
    if node.get("type") == "object" or isinstance(node.get("properties"), dict):
        node.setdefault("propertyNames", {"pattern": NO_NUL})
    for value in node.values():
        if isinstance(value, dict | list):
            _say_no_nul(value, components, seen)


class KernodeckAPI(NinjaAPI):
    """NinjaAPI whose document lists the error answers every operation can give, and whose
    answers to authenticated requests say `Cache-Control: no-store`."""

    def create_response(self, request, data, *, status=None, temporal_response=None):
        response = super().create_response(
            request, data, status=status, temporal_response=temporal_response
        )
        if _carries_secrets(request):
            response["Cache-Control"] = "no-store"
        return response

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components["Error"] = ErrorOut.model_json_schema()
        error_ref = {"$ref": "#/components/schemas/Error"}
        inputs: set[str] = set()  # the components that inputs use, marked once
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                if operation.pop("x-idempotent", False):
                    operation.setdefault("parameters", []).append(idempotency.OPENAPI_PARAMETER)
                _say_no_nul(operation.get("parameters"), components, inputs)
                _say_no_nul(operation.get("requestBody"), components, inputs)
                responses = operation.setdefault("responses", {})
                for code in _possible_errors(path, method, operation):
                    responses.setdefault(
                        code,
                        {
                            "description": (code == 401 and CREDENTIAL_CHECKS.get((method, path)))
                            or ERRORS[code],
                            "content": {"application/json": {"schema": error_ref}},
                        },
                    )
        return schema


api = KernodeckAPI(
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


def refuse_unknown_query(run):
    """A query parameter the operation does not take is a 422 naming it (`?stat=queued`
    would otherwise list everything), as an unknown body field is (core/schemas.py); and
    an answer to a request with a token says `Cache-Control: no-store` (_carries_secrets)."""
    operation = inspect.unwrap(run).__self__
    known = {
        name
        for model in operation.models
        if model.__ninja_param_source__ == "query"
        for name in model.__ninja_flatten_map__
    }

    @functools.wraps(run)
    def wrapper(request, *args, **kwargs):
        unknown = sorted(set(request.GET) - known)
        if unknown:
            takes = ", ".join(sorted(known)) or "none"
            return _detail(
                request,
                f"{unknown[0]}: this operation takes no such query parameter (it takes: {takes}).",
                422,
            )
        response = run(request, *args, **kwargs)
        if _carries_secrets(request):
            # Also on answers a view returns already built (create_response is not called).
            response["Cache-Control"] = "no-store"
        return response

    return wrapper


api.add_decorator(refuse_unknown_query, mode="view")
api.add_router("/auth", accounts_router)
api.add_router("/", catalog_router)
api.add_router("/", orders_router)
api.add_router("/", payments_router)
api.add_router("/", ledger_router)
api.add_router("/", ssh_keys_router)
api.add_router("/ops", ops_router)
api.add_router("/", sizing_router)
api.add_router("/", support_router)


def _detail(request, message: str, status: int, headers: dict | None = None, *, code=""):
    body = {"detail": message, "code": code} if code else {"detail": message}
    response = api.create_response(request, body, status=status)
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
    if isinstance(exc, Unauthenticated):
        # A 401 names its scheme (RFC 9110): the token that a right pair would give.
        return _detail(request, exc.message, exc.status, {"WWW-Authenticate": "Bearer"})
    return _detail(request, exc.message, exc.status, code=exc.code)


@api.exception_handler(HttpError)
def on_http_error(request, exc):
    return _detail(request, str(exc), exc.status_code)


@api.exception_handler(Http404)
def on_not_found(request, exc):
    return _detail(request, "Not found.", 404)


@api.exception_handler(RequestDataTooBig)
def on_too_big(request, exc):
    return too_large(request)


@api.exception_handler(IntegrityError)
def on_integrity_error(request, exc):
    """A database constraint refused a write that a concurrent request made impossible.
    Services map the constraints they know to a precise 409; this is the net under them:
    a lost race is a conflict the client can act on, not a server error."""
    logger.warning("Constraint refused %s %s: %s", request.method, request.path, exc)
    return _detail(
        request,
        "This conflicts with a change made at the same moment (a database constraint "
        "refused it). Reload the object and check its state before trying again.",
        409,
    )


DATABASE_RETRY_AFTER = 5


def on_database_unavailable(request, exc):
    """The database connection dropped (a restart, a failover, a terminated backend): 503
    with Retry-After, never a bare 500. A read changed nothing; for a write the answer
    cannot know whether the database committed it before the connection went, so it says
    so and sends the client to look before trying again."""
    logger.warning("Database unavailable in %s %s: %s", request.method, request.path, exc)
    try:
        connection.close()  # the next request opens a fresh connection
    except Exception:  # closing a dead connection may itself fail
        logger.debug("closing the dropped connection failed", exc_info=True)
    if request.method in {"GET", "HEAD", "OPTIONS"}:
        message = "The database is unavailable for a moment; nothing was changed. Try again."
    elif getattr(request, "idempotency_key", None):
        # The whole write ran in the key's transaction, which the drop rolled back.
        message = (
            "The database connection dropped before this was saved, so nothing was changed. "
            f"Send it again with the same {idempotency.HEADER}."
        )
    else:
        message = (
            "The database connection dropped while answering, so we could not confirm "
            "whether this was done. Check the object (e.g. your order or balance) before "
            "trying again."
        )
    return _detail(request, message, 503, {"Retry-After": str(DATABASE_RETRY_AFTER)})


api.add_exception_handler(OperationalError, on_database_unavailable)
api.add_exception_handler(InterfaceError, on_database_unavailable)


@api.exception_handler(Exception)
def on_unexpected(request, exc):
    logger.exception("Unhandled error in %s %s", request.method, request.path)
    return _detail(request, "Internal server error. It has been logged.", 500)
