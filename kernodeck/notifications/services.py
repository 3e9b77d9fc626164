"""E-mail: the outbox that every other domain writes through, and its delivery.

`email_enqueue` is the one entry point. Call it inside the transaction of the change the
e-mail tells about: it renders the message in the account's language, stores it once per
`dedupe_key`, and asks the task queue to send it after that transaction commits, so a
rolled-back change never sends anything. Delivery is retried with backoff; the row keeps
the status, the number of attempts and the last error for the back-office.

Context values are plain data (str, int, bool, None, Decimal, date/datetime, lists and
dicts of those) and never carry secrets: a key that names a secret (token, password, key,
secret, credential…) or a value that looks like one is refused with `UnsafeContext`.
Every template also receives `first_name` (the account's) and `site_url`.

Events and their context keys (all required):

- ``order_registered``: reference, gpu_model, units, gpus, days, total_usd, hold_until
  (datetime: the units are held until then).
- ``payment_confirmed`` (the order is settled): reference, gpu_model, gpus, days, total_usd.
- ``topup_credited``: amount_usd, balance_usd (the balance after the credit).
- ``rental_preparing``: reference, gpu_model, gpus, preparation.
- ``rental_access_ready``: reference, starts_at, ends_at (datetimes). A link to the order
  file only: host, user and tokens stay on the site, behind the sign-in.
- ``rental_reminder``: reference, hours_left and minutes_left (ints, rounded down; the
  texts say hours and minutes), threshold_hours (72, 24 or 2), ends_at (datetime).
  Carries the FAQ's export checklist.
- ``rental_ended``: reference, ended_at (datetime).
- ``rental_failed``: reference, reason (words for the customer).
- ``rental_refunded``: reference, amount_usd.
- ``ticket_reply``: ticket_id, ticket_subject, ticket_path (the ticket's path on the site,
  e.g. "/support/42/").

Sent to an address, whether or not it has an account (`email_enqueue_to_address`): the
signed-out "I can't sign in" request. These never say whether the address has an account.

- ``access_request_received``: request_id (the first characters of its number).
- ``access_request_reply``: request_id, reply (staff's words, already cleaned of secrets).

Sent to an account after staff checked who asked:

- ``access_password_link``: link_path (the single-use page where the person chooses a new
  password; it stops working once used, when the password changes, or after
  ``PASSWORD_RESET_TIMEOUT``), valid_hours (int). The link is the one thing in an e-mail
  that opens a door, so it is short-lived, single-use and sent only by staff.
"""

import logging
import re
from datetime import date, datetime, timedelta
from decimal import Decimal
from functools import partial

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import IntegrityError, transaction
from django.template import TemplateDoesNotExist
from django.template.loader import render_to_string
from django.utils import translation

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, NotFound
from kernodeck.core.services import audit_record
from kernodeck.notifications.models import OutboxMessage, OutboxStatus

logger = logging.getLogger(__name__)

EVENTS: dict[str, frozenset[str]] = {
    "order_registered": frozenset(
        {"reference", "gpu_model", "units", "gpus", "days", "total_usd", "hold_until"}
    ),
    "payment_confirmed": frozenset({"reference", "gpu_model", "gpus", "days", "total_usd"}),
    "topup_credited": frozenset({"amount_usd", "balance_usd"}),
    "rental_preparing": frozenset({"reference", "gpu_model", "gpus", "preparation"}),
    "rental_access_ready": frozenset({"reference", "starts_at", "ends_at"}),
    "rental_reminder": frozenset(
        {"reference", "hours_left", "minutes_left", "threshold_hours", "ends_at"}
    ),
    "rental_ended": frozenset({"reference", "ended_at"}),
    "rental_failed": frozenset({"reference", "reason"}),
    "rental_refunded": frozenset({"reference", "amount_usd"}),
    "ticket_reply": frozenset({"ticket_id", "ticket_subject", "ticket_path"}),
    "access_request_received": frozenset({"request_id"}),
    "access_request_reply": frozenset({"request_id", "reply"}),
    "access_password_link": frozenset({"link_path", "valid_hours"}),
}

DEFAULT_LANGUAGE = "es"
# Delivery: a claimed message is left alone this long before another worker may try it;
# failed attempts wait 1, 2, 4… minutes (at most an hour); after MAX_ATTEMPTS it is failed
# and waits for an operator's retry.
CLAIM_SECONDS = 600
BACKOFF_BASE_SECONDS = 60
BACKOFF_MAX_SECONDS = 3600
MAX_ATTEMPTS = 8
SWEEP_BATCH = 100

_SECRET_WORDS = frozenset(
    {
        "token",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "key",
        "apikey",
        "credential",
        "credentials",
        "private",
        "otp",
    }
)
_SECRET_SUFFIXES = ("token", "key", "password", "secret", "passwd")
_SECRET_VALUE = re.compile(r"-----BEGIN|\bkd_[A-Za-z0-9_-]{20,}|\bgAAAAA[A-Za-z0-9_-]{20,}")
_PLAIN_SCALARS = (str, int, bool, Decimal, date, datetime, type(None))


class UnsafeContext(ValueError):
    """An e-mail context that is not plain data, or that might carry a secret."""


def _check_context(value, *, path: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise UnsafeContext(f"{path}: keys must be strings, not {key!r}")
            lowered = key.lower()
            words = set(re.split(r"[^a-z0-9]+", lowered)) | {lowered}
            if words & _SECRET_WORDS or lowered.endswith(_SECRET_SUFFIXES):
                raise UnsafeContext(
                    f"{path}.{key}: e-mails never carry secrets; link to the site instead"
                )
            _check_context(item, path=f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_context(item, path=f"{path}[{index}]")
    elif isinstance(value, float):
        raise UnsafeContext(f"{path}: no floats; pass money as Decimal or str")
    elif isinstance(value, _PLAIN_SCALARS):
        if isinstance(value, str) and _SECRET_VALUE.search(value):
            raise UnsafeContext(f"{path}: this value looks like a secret")
    else:
        raise UnsafeContext(f"{path}: {type(value).__name__} is not plain data")


def _language_of(account) -> str:
    language = getattr(account, "preferred_language", "") or DEFAULT_LANGUAGE
    available = {code for code, _name in settings.LANGUAGES}
    return language if language in available else DEFAULT_LANGUAGE


def _render(*, event: str, language: str, context: dict) -> tuple[str, str, str]:
    """Subject (one line), text body and optional HTML body, in `language`."""
    base = f"notifications/email/{event}"
    with translation.override(language):
        subject = render_to_string(f"{base}.subject.txt", context)
        text = render_to_string(f"{base}.txt", context)
        try:
            html = render_to_string(f"{base}.html", context)
        except TemplateDoesNotExist:
            html = ""
    subject = " ".join(subject.split())[:300]
    text = re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
    return subject, text, html


def email_enqueue(*, account, event: str, context: dict, dedupe_key: str) -> OutboxMessage:
    """Store an e-mail for `account` once per `dedupe_key` and send it after commit.

    Call it inside the transaction of the change it announces. Calling it again with the
    same key (a retried task, a second worker, a double click) returns the first row and
    sends nothing more; two concurrent callers get one row between them.
    """
    return _enqueue(
        account=account,
        to_email=account.email,
        language=_language_of(account),
        first_name=account.first_name,
        event=event,
        context=context,
        dedupe_key=dedupe_key,
    )


def email_enqueue_to_address(
    *, to_email: str, language: str, first_name: str, event: str, context: dict, dedupe_key: str
) -> OutboxMessage:
    """Like `email_enqueue`, to an address that need not belong to an account.

    The row names no account, whether or not one has this address: an answer to a
    signed-out request must be the same for both. `language` falls back to the default.
    """
    available = {code for code, _name in settings.LANGUAGES}
    return _enqueue(
        account=None,
        to_email=to_email,
        language=language if language in available else DEFAULT_LANGUAGE,
        first_name=first_name,
        event=event,
        context=context,
        dedupe_key=dedupe_key,
    )


def emails_enqueue_many(*, event: str, messages: list[tuple]) -> int:
    """`email_enqueue` for many accounts at once: [(account, context, dedupe_key)], each
    rendered in its account's language, all stored in one INSERT that skips a key already
    stored, each new one sent after commit. Returns how many were new.

    For periodic work that finds many e-mails due together (the reminder tick after a
    start or an outage): one statement instead of four per e-mail."""
    now = clock.now()
    rows = [
        _message(
            now=now,
            account=account,
            to_email=account.email,
            language=_language_of(account),
            first_name=account.first_name,
            event=event,
            context=context,
            dedupe_key=dedupe_key,
        )
        for account, context, dedupe_key in messages
    ]
    if not rows:
        return 0
    OutboxMessage.objects.bulk_create(rows, ignore_conflicts=True)
    # The rows this call wrote carry its timestamp; a key another caller stored first is
    # not ours to send (sending twice would be harmless: delivery claims the row).
    new = list(
        OutboxMessage.objects.filter(
            dedupe_key__in=[row.dedupe_key for row in rows], created_at=now
        ).values_list("pk", flat=True)
    )
    for pk in new:
        transaction.on_commit(partial(_send_later, pk))
    return len(new)


def _message(*, now, account, to_email, language, first_name, event, context, dedupe_key):
    """The outbox row of one e-mail, checked and rendered, not stored."""
    _check_message(event=event, context=context, dedupe_key=dedupe_key)
    render_context = {
        **context,
        "first_name": first_name,
        "site_url": settings.KERNODECK_SITE_URL,
    }
    subject, text, html = _render(event=event, language=language, context=render_context)
    return OutboxMessage(
        dedupe_key=dedupe_key,
        account=account,
        event=event,
        language=language,
        to_email=to_email,
        subject=subject,
        body_text=text,
        body_html=html,
        context=context,
        created_at=now,
        next_attempt_at=now,
    )


def _check_message(*, event, context, dedupe_key) -> None:
    if event not in EVENTS:
        raise ValueError(f"unknown e-mail event {event!r}")
    if not dedupe_key or len(dedupe_key) > 200:
        raise ValueError("dedupe_key must be 1 to 200 characters")
    _check_context(context, path="context")
    missing = EVENTS[event] - set(context)
    if missing:
        raise ValueError(f"{event} needs context keys: {', '.join(sorted(missing))}")


def _enqueue(
    *, account, to_email, language, first_name, event, context, dedupe_key
) -> OutboxMessage:
    _check_message(event=event, context=context, dedupe_key=dedupe_key)
    existing = OutboxMessage.objects.filter(dedupe_key=dedupe_key).first()
    if existing is not None:
        return existing
    message = _message(
        now=clock.now(),
        account=account,
        to_email=to_email,
        language=language,
        first_name=first_name,
        event=event,
        context=context,
        dedupe_key=dedupe_key,
    )
    try:
        # A savepoint, so losing the race to a concurrent enqueue leaves the caller's
        # transaction usable; the winner's row is the one both get.
        with transaction.atomic():
            message.save(force_insert=True)
    except IntegrityError:
        return OutboxMessage.objects.get(dedupe_key=dedupe_key)
    transaction.on_commit(partial(_send_later, message.pk))
    return message


def _send_later(message_id: int) -> None:
    from kernodeck.notifications import tasks

    try:
        tasks.outbox_send(message_id)
    except Exception:
        # The queue itself is unreachable: the periodic sweep sends the row later.
        logger.exception("could not enqueue e-mail %s; the sweep will send it", message_id)


def _backoff(attempts: int) -> timedelta:
    return timedelta(
        seconds=min(BACKOFF_MAX_SECONDS, BACKOFF_BASE_SECONDS * 2 ** max(0, attempts - 1))
    )


def outbox_deliver(*, message_id: int) -> OutboxMessage | None:
    """Send one pending message whose time has come; record the outcome on its row.

    The row is claimed (attempt counted, next attempt pushed past the claim window) in a
    short transaction, and the SMTP conversation happens after it, never under a lock.
    Returns None when there was nothing to send (already sent, claimed, or not yet due).
    """
    now = clock.now()
    with transaction.atomic():
        message = (
            OutboxMessage.objects.select_for_update(skip_locked=True)
            .filter(pk=message_id, status=OutboxStatus.PENDING, next_attempt_at__lte=now)
            .first()
        )
        if message is None:
            return None
        message.attempts += 1
        message.next_attempt_at = now + timedelta(seconds=CLAIM_SECONDS)
        message.save(update_fields=["attempts", "next_attempt_at"])

    email = EmailMultiAlternatives(
        subject=message.subject,
        body=message.body_text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[message.to_email],
    )
    if message.body_html:
        email.attach_alternative(message.body_html, "text/html")
    try:
        email.send()
    except Exception as exc:  # any backend failure is recorded and retried
        message.last_error = f"{type(exc).__name__}: {exc}"[:500]
        if message.attempts >= MAX_ATTEMPTS:
            message.status = OutboxStatus.FAILED
        message.next_attempt_at = clock.now() + _backoff(message.attempts)
        logger.warning("e-mail %s attempt %s failed: %s", message.pk, message.attempts, exc)
    else:
        message.status = OutboxStatus.SENT
        message.sent_at = clock.now()
        message.last_error = ""
    # Only the claim holder writes the outcome: the attempt count is its ticket.
    OutboxMessage.objects.filter(pk=message.pk, attempts=message.attempts).update(
        status=message.status,
        sent_at=message.sent_at,
        last_error=message.last_error,
        next_attempt_at=message.next_attempt_at,
    )
    return message


def outbox_send_due(*, limit: int = SWEEP_BATCH) -> int:
    """Send pending messages whose next attempt is due (the periodic sweep). Returns sent."""
    due = list(
        OutboxMessage.objects.filter(status=OutboxStatus.PENDING, next_attempt_at__lte=clock.now())
        .order_by("next_attempt_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )
    sent = 0
    for message_id in due:
        message = outbox_deliver(message_id=message_id)
        if message is not None and message.status == OutboxStatus.SENT:
            sent += 1
    return sent


def outbox_retry(*, message_id: int, actor) -> OutboxMessage:
    """An operator sends a failed message again: a fresh set of attempts, at once."""
    with transaction.atomic():
        message = OutboxMessage.objects.select_for_update().filter(pk=message_id).first()
        if message is None:
            raise NotFound("No such e-mail in the outbox.")
        if message.status != OutboxStatus.FAILED:
            raise Conflict(f"Only a failed e-mail can be retried; this one is {message.status}.")
        before = {"status": message.status, "attempts": message.attempts}
        message.status = OutboxStatus.PENDING
        message.attempts = 0
        message.next_attempt_at = clock.now()
        message.save(update_fields=["status", "attempts", "next_attempt_at"])
        audit_record(
            action="notifications.outbox_retried",
            target=message,
            actor=actor,
            before=before,
            after={"status": message.status, "attempts": 0},
            data={"last_error": message.last_error},
        )
        transaction.on_commit(partial(_send_later, message.pk))
    return message
