"""What a customer sends, checked and cleaned before any support write stores it.

The texts of a ticket or message (subject, body, the guided form's fields, the names and
contents of attached files) are validated here and passed through `redaction.redact`, with
a tally of what was removed. Apart from the writers because it writes nothing: the same
checks serve tickets, extensions and the htmx redaction preview.
"""

from dataclasses import dataclass
from datetime import date, datetime

from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import InvalidInput, NotFound
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders.models import Order, PaymentState, RentalState
from kernodeck.support import redaction, selectors
from kernodeck.support.models import Kind

SUBJECT_MAX = 200
BODY_MAX = 20_000
FIELD_MAX = 10_000
ATTACHMENT_MAX_BYTES = 512 * 1024
ATTACHMENTS_PER_MESSAGE = 3
EXTENSION_MAX_DAYS = 90

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
            # Only what draws the image is kept; what hid after its end or in its metadata is
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
