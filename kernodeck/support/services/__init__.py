"""Support actions: the only code that writes tickets, messages, attachments and extensions.

One module per seam, every public name re-exported here so callers keep writing
`services.ticket_create(...)`:

- `intake`: what a customer sends, validated and cleaned of secrets (texts, the guided
  form's fields, attachments), and the redaction preview; writes nothing;
- `tickets`: open a ticket, add a message, move its status (staff replies e-mail after commit);
- `extensions`: offer, decline, pay from the balance or in crypto, settle and apply;
- `access`: the signed-out "I can't sign in" request, staff's e-mailed answer, and the
  new-password link staff send once they have checked who asked.
"""

from kernodeck.support.services.access import (
    access_password_link_send,
    access_reply,
    access_request_create,
    access_request_received_message,
)
from kernodeck.support.services.extensions import (
    EXTENDABLE_STATES,
    OFFER_MAX_VALID_DAYS,
    DeclaredExtensionPaymentPending,
    extension_declared_warning,
    extension_decline,
    extension_default_price,
    extension_offer,
    extension_pay_with_balance,
    extension_payment_create,
    extension_settle,
)
from kernodeck.support.services.intake import (
    ATTACHMENT_MAX_BYTES,
    ATTACHMENTS_PER_MESSAGE,
    BODY_MAX,
    EXTENSION_FIELDS,
    EXTENSION_MAX_DAYS,
    FIELD_MAX,
    IMAGE_SIGNATURES,
    KIND_FIELDS,
    PAYMENT_FIELDS,
    PROBLEM_FIELDS,
    PROBLEM_WHEN,
    SUBJECT_MAX,
    TEXT_EXTENSIONS,
    Upload,
    attachment_check,
    redaction_preview,
)
from kernodeck.support.services.tickets import (
    ticket_create,
    ticket_message_add,
    ticket_status_set,
)

__all__ = [
    "ATTACHMENTS_PER_MESSAGE",
    "ATTACHMENT_MAX_BYTES",
    "BODY_MAX",
    "EXTENDABLE_STATES",
    "EXTENSION_FIELDS",
    "EXTENSION_MAX_DAYS",
    "FIELD_MAX",
    "IMAGE_SIGNATURES",
    "KIND_FIELDS",
    "OFFER_MAX_VALID_DAYS",
    "PAYMENT_FIELDS",
    "PROBLEM_FIELDS",
    "PROBLEM_WHEN",
    "SUBJECT_MAX",
    "TEXT_EXTENSIONS",
    "DeclaredExtensionPaymentPending",
    "Upload",
    "access_password_link_send",
    "access_reply",
    "access_request_create",
    "access_request_received_message",
    "attachment_check",
    "extension_declared_warning",
    "extension_decline",
    "extension_default_price",
    "extension_offer",
    "extension_pay_with_balance",
    "extension_payment_create",
    "extension_settle",
    "redaction_preview",
    "ticket_create",
    "ticket_message_add",
    "ticket_status_set",
]
