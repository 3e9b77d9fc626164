"""Support actions: the only code that writes tickets, messages, attachments and extensions.

Every text a customer sends is cleaned by `redaction.redact` before it is stored; what was
removed is stored beside it so the customer (and staff) can see that something was.
Staff replies e-mail the customer after commit.
"""

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput, NotFound
from kernodeck.core.money import usd, usd_str
from kernodeck.core.services import audit_record
from kernodeck.ledger import services as ledger_services
from kernodeck.notifications import services as notification_services
from kernodeck.orders import locks as order_locks
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders.models import Order, PaymentState, RentalState
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import Purpose
from kernodeck.provisioning.services import rental_extend
from kernodeck.support import locks as support_locks
from kernodeck.support import pricing, redaction, selectors
from kernodeck.support.models import (
    EXTENSION_TRANSITIONS,
    KINDS_NEEDING_ORDER,
    STATUS_TRANSITIONS,
    Attachment,
    Extension,
    ExtensionStatus,
    Kind,
    Message,
    Status,
    Ticket,
)

SUBJECT_MAX = 200
BODY_MAX = 20_000
FIELD_MAX = 10_000
ATTACHMENT_MAX_BYTES = 512 * 1024
ATTACHMENTS_PER_MESSAGE = 3
EXTENSION_MAX_DAYS = 90
OFFER_MAX_VALID_DAYS = 30
# Rentals whose end can move (what `rental_extend` accepts).
EXTENDABLE_STATES = {RentalState.ACTIVE, RentalState.SUSPENDED}

TEXT_EXTENSIONS = {
    ".txt",
    ".log",
    ".py",
    ".json",
    ".yaml",
    ".yml",
    ".csv",
    ".md",
    ".sh",
    ".toml",
    ".ini",
    ".cfg",
    ".out",
    ".err",
}
IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
}

# The guided forms: which structured fields each kind accepts, and the choices of some.
PROBLEM_WHEN = ("loading", "first_computation", "after_iterations", "other")
PROBLEM_FIELDS = (
    "when",
    "launch_command",
    "python_version",
    "pytorch_version",
    "backend_version",
    "driver_version",
    "first_error",
    "minimal_example",
    "input_shapes",
)
EXTENSION_FIELDS = ("extra_days", "configuration", "deadline")
PAYMENT_FIELDS = ("payment", "sent", "network")
KIND_FIELDS = {
    Kind.PROBLEM: PROBLEM_FIELDS,
    Kind.EXTENSION: EXTENSION_FIELDS,
    Kind.PAYMENT: PAYMENT_FIELDS,
    Kind.ACCOUNT: (),
    Kind.OTHER: (),
}


@dataclass(frozen=True)
class Upload:
    """A file as received from a form: its name, bytes and what the client claimed."""

    name: str
    data: bytes
    content_type: str = ""


# -- input --------------------------------------------------------------------------------


def _text(value, *, field: str, limit: int, required: bool = False) -> str:
    """A trimmed string within `limit`; refuses NUL bytes and other control characters."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(_("Enter text."), field=field)
    value = value.replace("\r\n", "\n").strip()
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from JSON "\ud800": not storable text
        raise InvalidInput(_("The text is not valid Unicode."), field=field) from None
    if "\x00" in value:
        raise InvalidInput(
            _("The text contains a NUL byte; remove it and send again."), field=field
        )
    if any(ord(c) < 32 and c not in "\n\t" for c in value):
        raise InvalidInput(_("The text contains control characters; remove them."), field=field)
    if len(value) > limit:
        raise InvalidInput(
            _("Keep this under %(limit)s characters; attach a file or shorten the log.")
            % {"limit": f"{limit:,}"},
            field=field,
        )
    if required and not value:
        raise InvalidInput(_("This field is required."), field=field)
    return value


def _positive_days(value, *, field: str, required: bool) -> int | None:
    text = str(value if value is not None else "").strip()
    if not text:
        if required:
            raise InvalidInput(_("Say how many extra days you want."), field=field)
        return None
    message = _("Give a whole number of days between 1 and %(max)d.") % {"max": EXTENSION_MAX_DAYS}
    if isinstance(value, bool) or not (text.isascii() and text.isdigit()):
        raise InvalidInput(message, field=field)
    days = int(text)
    if not 1 <= days <= EXTENSION_MAX_DAYS:
        raise InvalidInput(message, field=field)
    return days


def _date(value, *, field: str) -> date | None:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    text = str(value if value is not None else "").strip()
    if not text:
        return None
    try:
        if not text.isascii():
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise InvalidInput(_("Give a date as YYYY-MM-DD."), field=field) from None


def _kind(value) -> str:
    if value not in Kind.values:
        raise InvalidInput(
            _("Choose what the ticket is about: %(kinds)s.") % {"kinds": ", ".join(Kind.values)},
            field="kind",
        )
    return value


def _reference(value) -> str:
    """An order reference as typed, or "" when it cannot be one (other scripts, NUL bytes:
    nothing that odd reaches a query)."""
    text = str(value or "").strip().upper()
    if len(text) > 16 or not all(c.isascii() and (c.isalnum() or c == "-") for c in text):
        return ""
    return text


def _owned_order(*, owner, reference) -> Order:
    """The customer's own order; another account's reference reads as unknown."""
    try:
        return order_selectors.order_get_for_owner(
            owner=owner, reference=_reference(reference) or "-"
        )
    except NotFound as exc:
        raise InvalidInput(exc.message, field="order") from None


class _Cleaner:
    """Redacts every text of one submission and sums up what was removed."""

    def __init__(self, known_secrets):
        self.known = tuple(known_secrets)
        self.counts: dict[str, int] = {}

    def __call__(self, text: str) -> str:
        result = redaction.redact(text, known_secrets=self.known)
        for finding in result.findings:
            self.counts[finding.kind] = self.counts.get(finding.kind, 0) + finding.count
        return result.text

    def report(self) -> list[dict]:
        order = list(redaction.KIND_LABELS)
        return [
            {"kind": kind, "label": str(redaction.KIND_LABELS[kind]), "count": self.counts[kind]}
            for kind in sorted(self.counts, key=order.index)
        ]


def _fields(*, kind, raw: dict, order, owner, clean) -> tuple[dict, dict]:
    """Validate the guided form's answers. Returns (stored fields, extra model values)."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise InvalidInput(_("The form fields are not valid."), field="fields")
    unknown = set(raw) - set(KIND_FIELDS[kind])
    if unknown:
        raise InvalidInput(
            _("Unknown field(s) for this kind of ticket: %(names)s.")
            % {"names": ", ".join(sorted(map(str, unknown)))[:200]},
            field="fields",
        )
    stored: dict = {}
    extra: dict = {}
    if kind == Kind.PROBLEM:
        when = str(raw.get("when") or "").strip()
        if when and when not in PROBLEM_WHEN:
            raise InvalidInput(_("Choose when the problem happened."), field="when")
        if when:
            stored["when"] = when
        for name in PROBLEM_FIELDS[1:]:
            value = _text(raw.get(name), field=name, limit=FIELD_MAX)
            if value:
                stored[name] = clean(value)
    elif kind == Kind.EXTENSION:
        days = _positive_days(raw.get("extra_days"), field="extra_days", required=False)
        configuration = clean(_text(raw.get("configuration"), field="configuration", limit=2000))
        if days is None and not configuration:
            raise InvalidInput(
                _("Say how many extra days you want, or the configuration you need."),
                field="extra_days",
            )
        deadline = _date(raw.get("deadline"), field="deadline")
        if deadline is None:
            raise InvalidInput(_("Give the date by which you need an answer."), field="deadline")
        if deadline < clock.now().date():
            raise InvalidInput(_("The deadline is in the past."), field="deadline")
        if order.payment_state != PaymentState.SETTLED or order.rental_state in {
            RentalState.ENDED
        }:
            raise InvalidInput(
                _("Only a paid rental that has not ended can be extended."), field="order"
            )
        stored.update(
            {k: v for k, v in {"extra_days": days, "configuration": configuration}.items() if v}
        )
        stored["deadline"] = deadline.isoformat()
        extra.update(requested_days=days, deadline=deadline)
    elif kind == Kind.PAYMENT:
        payment = str(raw.get("payment") or "").strip()
        if payment:
            intent = selectors.intent_of_order(order=order, intent_id=payment)
            if intent is None:
                raise InvalidInput(_("Choose one of this order's payments."), field="payment")
            extra["intent"] = intent
            stored["payment"] = str(intent.pk)
        for name in ("sent", "network"):
            value = clean(_text(raw.get(name), field=name, limit=500))
            if value:
                stored[name] = value
    return stored, extra


def attachment_check(upload: Upload) -> tuple[str, bytes]:
    """Refuse files that are too big or not plain text or PNG/JPEG; returns (type, bytes).

    The type comes from the content (text that decodes as UTF-8, or an image signature),
    never from what the browser claimed.
    """
    name = upload.name or ""
    if len(upload.data) > ATTACHMENT_MAX_BYTES:
        raise InvalidInput(
            _("%(name)s is larger than %(kib)d KiB; attach a shorter excerpt.")
            % {"name": name[:80], "kib": ATTACHMENT_MAX_BYTES // 1024},
            field="attachments",
        )
    if not upload.data:
        raise InvalidInput(_("%(name)s is empty.") % {"name": name[:80]}, field="attachments")
    for signature, content_type in IMAGE_SIGNATURES.items():
        if upload.data.startswith(signature):
            try:
                redaction.image_split(upload.data)
            except redaction.NotAnImage:
                raise InvalidInput(
                    _("%(name)s is not a valid PNG or JPEG image.") % {"name": name[:80]},
                    field="attachments",
                ) from None
            return content_type, upload.data
    suffix = ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""
    refusal = _(
        "%(name)s: attach text files (logs, .py, .json, .yaml…) or PNG/JPEG screenshots only."
    ) % {"name": name[:80]}
    if suffix not in TEXT_EXTENSIONS or b"\x00" in upload.data:
        raise InvalidInput(refusal, field="attachments")
    try:
        upload.data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(refusal, field="attachments") from None
    return "text/plain", upload.data


def _attachments_prepare(uploads, clean) -> list[dict]:
    uploads = list(uploads or ())
    if len(uploads) > ATTACHMENTS_PER_MESSAGE:
        raise InvalidInput(
            _("Attach at most %(n)d files per message.") % {"n": ATTACHMENTS_PER_MESSAGE},
            field="attachments",
        )
    prepared = []
    for upload in uploads:
        content_type, data = attachment_check(upload)
        before = dict(clean.counts)
        if content_type == "text/plain":
            data = clean(data.decode("utf-8")).encode("utf-8")
        else:
            # Only the image is kept; what hid after its end or in its text metadata is
            # scanned so the notice tells the customer, then dropped.
            data, dropped = redaction.image_split(data)
            if dropped:
                clean(dropped.decode("utf-8", "replace"))
        # The name is text the customer chose: a token pasted as a file name goes too.
        safe_name = clean(
            "".join(c for c in (upload.name or "file") if c.isprintable() and c not in '/\\"')
        )
        removed = {k: v - before.get(k, 0) for k, v in clean.counts.items() if v != before.get(k)}
        prepared.append(
            {
                "name": safe_name[-120:] or "file",
                "content_type": content_type,
                "size": len(data),
                "data": data,
                "redactions": [
                    {"kind": k, "label": str(redaction.KIND_LABELS[k]), "count": n}
                    for k, n in removed.items()
                ],
            }
        )
    return prepared


# -- tickets ------------------------------------------------------------------------------


def redaction_preview(*, owner, text: str, order_reference: str = "") -> redaction.Redacted:
    """What would be removed from `text` (the htmx preview before sending). Writes nothing."""
    order = None
    if _reference(order_reference):
        order = (
            order_selectors.orders_for(owner=owner)
            .filter(reference=_reference(order_reference))
            .first()
        )
    return redaction.redact(text or "", known_secrets=selectors.known_secrets(order=order))


def _extension_in_progress(order) -> str:
    return _(
        "Order %(reference)s already has an extension request in progress; "
        "continue in that ticket."
    ) % {"reference": order.reference}


def ticket_create(
    *,
    owner,
    kind: str,
    subject: str,
    body: str,
    order: str | None = None,
    fields: dict | None = None,
    attachments=(),
) -> Ticket:
    """Open a ticket with its first message. Texts are cleaned of secrets before storage.

    Extension and payment tickets need one of the customer's own orders; an extension
    ticket also records the request (`Extension`, status requested) that staff answer.
    """
    kind = _kind(kind)
    subject = _text(subject, field="subject", limit=SUBJECT_MAX, required=True)
    body = _text(body, field="body", limit=BODY_MAX, required=True)
    order_obj = None
    if order:
        order_obj = _owned_order(owner=owner, reference=order)
    elif kind in KINDS_NEEDING_ORDER:
        raise InvalidInput(_("Choose the order this is about."), field="order")
    clean = _Cleaner(selectors.known_secrets(order=order_obj))
    stored, extra = _fields(kind=kind, raw=fields, order=order_obj, owner=owner, clean=clean)
    subject = clean(subject)
    body = clean(body)
    prepared = _attachments_prepare(attachments, clean)
    now = clock.now()
    with transaction.atomic():
        if kind == Kind.EXTENSION and selectors.extension_open_for(order=order_obj):
            raise Conflict(_extension_in_progress(order_obj))
        ticket = Ticket.objects.create(
            owner=owner,
            kind=kind,
            order=order_obj,
            intent=extra.get("intent"),
            subject=subject,
            fields=stored,
            status=Status.OPEN,
            created_at=now,
            last_customer_at=now,
            updated_at=now,
        )
        report = clean.report()
        message = Message.objects.create(
            ticket=ticket, author=owner, body=body, redactions=report, created_at=now
        )
        for item in prepared:
            Attachment.objects.create(message=message, created_at=now, **item)
        if kind == Kind.EXTENSION:
            try:
                # A request opened at the same moment passed the check above too; the
                # unique constraint (one open extension per order) decides, and the loser
                # is told why instead of failing. The savepoint keeps the error contained;
                # the Conflict rolls the whole ticket back.
                with transaction.atomic():
                    Extension.objects.create(
                        ticket=ticket,
                        order=order_obj,
                        requested_days=extra.get("requested_days"),
                        deadline=extra.get("deadline"),
                        created_at=now,
                    )
            except IntegrityError:
                raise Conflict(_extension_in_progress(order_obj)) from None
        audit_record(
            action="support.ticket_opened",
            target=ticket,
            actor=owner,
            after={"kind": kind, "order": order_obj.reference if order_obj else None},
            data={"removed": {r["kind"]: r["count"] for r in report}},
        )
        if order_obj is not None:
            audit_record(
                action="order.ticket_opened",
                target=order_obj,
                actor=owner,
                after={"ticket": str(ticket.pk), "kind": kind},
            )
    ticket.new_message = message
    return ticket


def ticket_message_add(
    *, ticket: Ticket, author, body: str, attachments=(), from_staff: bool = False, status=None
) -> Message:
    """Add a message to a thread and move the ticket's status.

    A customer's message (re)opens the ticket; a staff reply marks it answered (or
    "waiting for you" when staff ask for something) and e-mails the customer.
    """
    body = _text(body, field="body", limit=BODY_MAX, required=True)
    clean = _Cleaner(selectors.known_secrets(order=ticket.order))
    body = clean(body)
    prepared = _attachments_prepare(attachments, clean)
    if from_staff:
        status = status or Status.ANSWERED
        if status not in {Status.ANSWERED, Status.WAITING, Status.CLOSED}:
            raise InvalidInput(_("Choose the status after this reply."), field="status")
    else:
        status = Status.OPEN
    now = clock.now()
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update(no_key=True).get(pk=ticket.pk)
        message = Message.objects.create(
            ticket=ticket,
            author=author,
            from_staff=from_staff,
            body=body,
            redactions=clean.report(),
            created_at=now,
        )
        for item in prepared:
            Attachment.objects.create(message=message, created_at=now, **item)
        before = ticket.status
        ticket.status = status
        ticket.updated_at = now
        if from_staff:
            ticket.last_staff_at = now
        else:
            ticket.last_customer_at = now
        ticket.save(update_fields=["status", "updated_at", "last_staff_at", "last_customer_at"])
        audit_record(
            action="support.staff_replied" if from_staff else "support.customer_wrote",
            target=ticket,
            actor=author,
            before={"status": before},
            after={"status": status, "message": message.pk},
        )
        if from_staff:
            # A link only: the reply itself stays behind the sign-in. Sent after commit.
            notification_services.email_enqueue(
                account=ticket.owner,
                event="ticket_reply",
                context={
                    "ticket_id": str(ticket.pk)[:8],
                    "ticket_subject": ticket.subject,
                    "ticket_path": reverse("support:detail", args=[ticket.pk]),
                },
                dedupe_key=f"ticket_reply:{message.pk}",
            )
    return message


def ticket_status_set(*, ticket: Ticket, status: str, actor) -> Ticket:
    """Staff move a ticket (waiting for you, answered, closed, reopened)."""
    if status not in Status.values:
        raise InvalidInput(_("Unknown status."), field="status")
    with transaction.atomic():
        ticket = Ticket.objects.select_for_update(no_key=True).get(pk=ticket.pk)
        if ticket.status == status:
            return ticket
        if status not in STATUS_TRANSITIONS[ticket.status]:
            raise Conflict(
                _("A %(current)s ticket cannot become %(new)s.")
                % {"current": ticket.get_status_display(), "new": Status(status).label}
            )
        before = ticket.status
        ticket.status = status
        ticket.updated_at = clock.now()
        ticket.save(update_fields=["status", "updated_at"])
        audit_record(
            action="support.status_changed",
            target=ticket,
            actor=actor,
            before={"status": before},
            after={"status": status},
        )
    return ticket


# -- extensions ---------------------------------------------------------------------------


def _move(extension: Extension, status: str) -> None:
    if status not in EXTENSION_TRANSITIONS[extension.status]:
        raise Conflict(
            _("This extension is %(state)s; it cannot become %(new)s.")
            % {
                "state": extension.get_status_display().lower(),
                "new": ExtensionStatus(status).label.lower(),
            }
        )


def _price(value, *, field="price_usd") -> Decimal:
    message = _("Give a price in USD greater than zero, e.g. 150.00.")
    text = str(value).strip()
    if not text.isascii():
        raise InvalidInput(message, field=field)
    try:
        price = Decimal(text)
    except InvalidOperation:
        raise InvalidInput(message, field=field) from None
    if not price.is_finite() or price <= 0 or price >= Decimal("1000000"):
        raise InvalidInput(message, field=field)
    return usd(price)


def extension_default_price(*, order: Order, days: int) -> Decimal:
    """The price sheet's price for `days` more days of this order's units."""
    sheet = {p.days: p.unit_price_usd for p in order.offer.prices.all()}
    return pricing.extension_price(unit_prices=sheet, units=order.units, days=days)


def extension_offer(
    *, extension: Extension, days, valid_until: datetime, actor, price_usd=None
) -> Extension:
    """Staff answer a request with an offer: extra days, a price (the sheet's by default,
    or a custom one) and how long the offer stands. Nothing changes for the rental yet."""
    days = _positive_days(days, field="days", required=True)
    now = clock.now()
    if valid_until is None or valid_until <= now:
        raise InvalidInput(_("The offer must be valid until a future time."), field="valid_until")
    if valid_until > now + timedelta(days=OFFER_MAX_VALID_DAYS):
        raise InvalidInput(
            _("An offer stands for at most %(n)d days.") % {"n": OFFER_MAX_VALID_DAYS},
            field="valid_until",
        )
    custom = price_usd not in (None, "")
    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        _move(extension, ExtensionStatus.OFFERED)
        if extension.order.rental_state not in EXTENDABLE_STATES:
            raise Conflict(_("Only a running rental can be extended; this one is not."))
        price = (
            _price(price_usd)
            if custom
            else extension_default_price(order=extension.order, days=days)
        )
        before = {"status": extension.status}
        extension.status = ExtensionStatus.OFFERED
        extension.days = days
        extension.price_usd = price
        extension.custom_price = custom
        extension.valid_until = valid_until
        extension.offered_by = actor
        extension.offered_at = now
        extension.save(
            update_fields=[
                "status",
                "days",
                "price_usd",
                "custom_price",
                "valid_until",
                "offered_by",
                "offered_at",
            ]
        )
        after = {
            "status": extension.status,
            "days": days,
            "price_usd": usd_str(price),
            "custom_price": custom,
            "valid_until": valid_until.isoformat(),
        }
        audit_record(
            action="support.extension_offered",
            target=extension,
            actor=actor,
            before=before,
            after=after,
        )
        audit_record(
            action="order.extension_offered",
            target=extension.order,
            actor=actor,
            after={"days": days, "price_usd": usd_str(price)},
        )
        _ticket_touch(extension.ticket_id, status=Status.ANSWERED)
    return extension


def extension_decline(*, extension: Extension, reason: str, actor) -> Extension:
    """Staff decline a request or withdraw an unpaid offer, with the reason the customer
    reads. Nothing about the rental changes."""
    reason = _text(reason, field="reason", limit=2000, required=True)
    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        _move(extension, ExtensionStatus.DECLINED)
        before = {"status": extension.status}
        extension.status = ExtensionStatus.DECLINED
        extension.decline_reason = reason
        extension.save(update_fields=["status", "decline_reason"])
        audit_record(
            action="support.extension_declined",
            target=extension,
            actor=actor,
            before=before,
            after={"status": extension.status, "reason": reason},
        )
        audit_record(
            action="order.extension_declined",
            target=extension.order,
            actor=actor,
            after={"reason": reason},
        )
        _ticket_touch(extension.ticket_id, status=Status.ANSWERED)
    return extension


def _ticket_touch(ticket_id, *, status) -> None:
    Ticket.objects.filter(pk=ticket_id).update(status=status, updated_at=clock.now())


def _check_payable(extension: Extension) -> None:
    if extension.status != ExtensionStatus.OFFERED:
        raise Conflict(_("There is no offer waiting for payment in this ticket."))
    if extension.order.rental_state not in EXTENDABLE_STATES:
        raise Conflict(_("This rental is no longer running, so it cannot be extended."))
    if extension.valid_until <= clock.now():
        raise Conflict(
            _("This offer expired on %(at)s UTC; ask support for a new one.")
            % {"at": extension.valid_until.strftime("%Y-%m-%d %H:%M")}
        )


def extension_pay_with_balance(*, extension: Extension, actor) -> Extension:
    """Pay an offer from the available balance and apply it, in one transaction.

    The account, then the extension, are locked first: a second press (or a concurrent
    API call) waits, then finds the offer paid and charges nothing. The ledger also
    refuses a second charge for the same extension (unique constraint).
    """

    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        if extension.status in {ExtensionStatus.PAID, ExtensionStatus.APPLIED}:
            return extension
        _check_payable(extension)
        if selectors.extension_payment_seen(extension=extension) is not None:
            # Charging now would make the customer pay twice once that transfer confirms.
            raise Conflict(
                _(
                    "A crypto payment for this offer was already seen on chain and is being "
                    "checked; the balance is not charged."
                )
            )
        entry = ledger_services.extension_charge(extension=extension, actor=actor)
        return _settle_locked(extension, actor=actor, cause={"ledger_entry": entry.pk})


def extension_payment_create(*, extension: Extension, method_code: str, actor):
    """Crypto instructions for an offer (a payment with purpose `extension`)."""

    # Refusals and any rate fetch before the lock; read once.
    prepared = payment_services.instructions_prepare(method_code)
    with transaction.atomic():
        extension = support_locks.lock_extension(extension.pk)
        _check_payable(extension)
        live = payment_selectors.live_intent(extension.intents.all())
        if live is not None:
            raise Conflict(
                _("This offer already has payment instructions valid until %(until)s UTC.")
                % {"until": live.expires_at.strftime("%Y-%m-%d %H:%M")}
            )
        intent = payment_services.payment_intent_create(
            owner=extension.order.owner,
            method_code=method_code,
            amount_usd=extension.price_usd,
            purpose=Purpose.EXTENSION,
            extension=extension,
            actor=actor,
            prepared=prepared,
            order_event=("order.extension_payment_created", extension.order),
        )
    return intent


def extension_settle(*, extension_id, intent_id, cause: dict, actor=None) -> Extension:
    """Called by payment reconciliation (and review) when an extension payment is
    confirmed: mark it paid and move the rental's end. Idempotent for the same payment;
    a second payment for an offer already paid (say, from the balance meanwhile) is
    refused, so it waits in review instead of being swallowed."""
    with transaction.atomic():
        extension = support_locks.lock_extension(extension_id)
        if extension.status in {ExtensionStatus.PAID, ExtensionStatus.APPLIED}:
            if extension.paid_by_payment_id == intent_id:
                return extension
            raise Conflict(_("This extension was already paid; this payment needs a decision."))
        if extension.status != ExtensionStatus.OFFERED:
            raise Conflict(_("The extension offer was withdrawn before this payment arrived."))
        return _settle_locked(extension, actor=actor, cause=cause, intent_id=intent_id)


def _settle_locked(extension: Extension, *, actor, cause: dict, intent_id=None) -> Extension:
    now = clock.now()
    _move(extension, ExtensionStatus.PAID)
    extension.status = ExtensionStatus.PAID
    extension.paid_at = now
    extension.paid_by_payment_id = intent_id
    extension.save(update_fields=["status", "paid_at", "paid_by_payment"])
    audit_record(
        action="support.extension_paid",
        target=extension,
        actor=actor,
        after={"status": extension.status, **cause},
    )
    # The order's current end, read under its lock: the new end counts from it.
    order = order_locks.lock_order(extension.order_id)
    until = order.ends_at + timedelta(days=extension.days)
    rental_extend(
        order=order,
        until=until,
        reason=_("Extension of %(days)d days, paid (ticket %(ticket)s)")
        % {"days": extension.days, "ticket": str(extension.ticket_id)[:8]},
        actor=actor,
    )
    extension.status = ExtensionStatus.APPLIED
    extension.applied_at = now
    extension.new_ends_at = until
    extension.save(update_fields=["status", "applied_at", "new_ends_at"])
    audit_record(
        action="support.extension_applied",
        target=extension,
        actor=actor,
        after={"status": extension.status, "ends_at": until.isoformat()},
    )
    _ticket_touch(extension.ticket_id, status=Status.ANSWERED)
    return extension
