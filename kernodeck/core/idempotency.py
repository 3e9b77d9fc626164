"""`Idempotency-Key` on the API's money writes: one write per key, the first answer to every retry.

A client whose money write (an order, instructions, a payment from the balance, a top-up, an
extension payment) got no answer — a timeout, a 503 after a dropped database connection —
cannot know whether it happened. Sent again with the same key, the request returns the first
answer instead of writing a second time.

How it holds: the key's row is inserted at the start of one transaction that wraps the whole
write, and the answer is stored in that row before the transaction commits, so the write and
its answer exist together or not at all. A second request with the same key waits on the
unique constraint until the first one ends: if the first committed, its answer is replayed;
if it rolled back, nothing happened and the second one runs. Only successful (2xx) answers
are kept: a refusal changed nothing, its row is removed, and the request may be sent again
with the same key once corrected. Keys belong to the credential that sent them and are
forgotten after `KEEP`.
"""

import functools
import hashlib
import logging
import re
from datetime import timedelta

from django.db import IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.http import JsonResponse

from kernodeck.core import clock
from kernodeck.core.models import IdempotentAnswer

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
KEEP = timedelta(hours=24)
RETRY_AFTER = 5
KEY_PATTERN = r"^[!-~]{1,255}$"  # visible ASCII, no spaces
_KEY = re.compile(KEY_PATTERN)

# `openapi_extra` of a route that takes the header; the API document turns it into the
# header parameter (kernodeck/api/api.py).
OPENAPI = {"x-idempotent": True}
OPENAPI_PARAMETER = {
    "in": "header",
    "name": HEADER,
    "required": False,
    "schema": {"type": "string", "pattern": KEY_PATTERN},
    "description": (
        "Any unique string of yours (a UUID), up to 255 visible ASCII characters. Sent again "
        "with the same key and body, the request answers what it answered the first time "
        "(with `Idempotent-Replayed: true`) and writes nothing. Keys are kept 24 hours; only "
        "successful answers are kept."
    ),
}


def _answer(status: int, detail: str, headers: dict | None = None) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=status)
    response["Cache-Control"] = "no-store"
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def _replay(*, scope: str, key: str, fingerprint: str):
    answer = IdempotentAnswer.objects.get(scope=scope, key=key)
    if answer.fingerprint != fingerprint:
        return _answer(
            422,
            f"{HEADER}: this key was already used for a different request. Use a new key for "
            "each new request.",
        )
    response = JsonResponse({}, status=answer.status)
    response.content = bytes(answer.body)
    response["Content-Type"] = answer.content_type
    response["Cache-Control"] = "no-store"
    response["Idempotent-Replayed"] = "true"
    return response


def _unavailable(*, ran: bool) -> JsonResponse:
    try:
        connection.close()  # the next request opens a fresh connection
    except Exception:  # closing a dead connection may itself fail
        logger.debug("closing the dropped connection failed", exc_info=True)
    if ran:
        detail = (
            "The database connection dropped while this was being saved, so we could not "
            f"confirm whether it was done. Send it again with the same {HEADER}: if it was "
            "done you get its answer, otherwise it is done now (never twice)."
        )
    else:
        detail = (
            "The database is unavailable for a moment; nothing was changed. Send it again "
            f"with the same {HEADER}."
        )
    return _answer(503, detail, {"Retry-After": str(RETRY_AFTER)})


def idempotent(run):
    """Decorate a ninja operation's `run` (`ninja.decorators.decorate_view`)."""

    @functools.wraps(run)
    def wrapper(request, *args, **kwargs):
        key = request.headers.get(HEADER)
        credential = request.headers.get("Authorization", "")
        if key is None or not credential:
            return run(request, *args, **kwargs)  # no key; or no token, which answers 401
        if not _KEY.match(key):
            return _answer(
                422, f"{HEADER}: 1 to 255 visible ASCII characters (no spaces), e.g. a UUID."
            )
        scope = _digest(credential.encode())
        fingerprint = _digest(request.method.encode(), request.path.encode(), request.body)
        request.idempotency_key = key  # the 503 answer inside the write says what is known
        ran = False
        try:
            moment = clock.now()
            IdempotentAnswer.objects.filter(created_at__lt=moment - KEEP).delete()
            with transaction.atomic():
                try:
                    with transaction.atomic():
                        row = IdempotentAnswer.objects.create(
                            scope=scope, key=key, fingerprint=fingerprint, created_at=moment
                        )
                except IntegrityError:
                    # The first request with this key committed while this one waited.
                    return _replay(scope=scope, key=key, fingerprint=fingerprint)
                ran = True
                response = run(request, *args, **kwargs)
                if connection.needs_rollback or connection.closed_in_transaction:
                    return response  # the write's own error answer; nothing commits
                if 200 <= response.status_code < 300:
                    row.status = response.status_code
                    row.content_type = response.get("Content-Type", "application/json")
                    row.body = response.content
                    row.save(update_fields=["status", "content_type", "body"])
                else:
                    row.delete()  # a refusal: the key stays free for the corrected request
        except (OperationalError, InterfaceError):
            logger.warning("Database unavailable around %s %s", request.method, request.path)
            return _unavailable(ran=ran)
        return response

    return wrapper
