"""The signed-out "I can't sign in" request, staff's e-mailed answer, and the new password.

Somebody who cannot sign in cannot open a ticket (tickets belong to an account), so this
request takes an e-mail address, a name, the order references or payments they remember
and a message. It is throttled per address asked about and per network, its texts are
cleaned of secrets like a ticket's, and it lands in the staff inbox as its own kind.

Nothing the person sees depends on whether the address has an account: the same page, the
same acknowledgement e-mail to that address, the same row. Staff look the account up
beside the request, check the orders and payments the person describes, answer by e-mail
and, once satisfied, end every way into the account and e-mail it a single-use link where
the person chooses a new password (`access_password_link_send`).
"""

from django.conf import settings
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from kernodeck.accounts import services as account_services
from kernodeck.accounts import throttle
from kernodeck.accounts.models import normalize_email
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput, Throttled
from kernodeck.core.inputs import MAX_EMAIL_LENGTH
from kernodeck.core.requests import valid_ip
from kernodeck.core.services import audit_record
from kernodeck.notifications import services as notification_services
from kernodeck.support import selectors
from kernodeck.support.models import AccessReply, AccessRequest, AccessStatus
from kernodeck.support.services.intake import _Cleaner, _text

NAME_MAX = 300
REFERENCES_MAX = 2_000
ACCESS_BODY_MAX = 5_000


def access_request_received_message() -> str:
    # The one answer, whether or not the address has an account.
    return _(
        "Your request is sent. Support answers by e-mail at the address you gave; "
        "if it belongs to an account, they will first check the orders and payments "
        "you described."
    )


def _email(value) -> str:
    email = normalize_email(str(value or ""))
    if not email:
        raise InvalidInput(_("Enter the email address of your account."), field="email")
    if len(email) > MAX_EMAIL_LENGTH:
        raise InvalidInput(
            _("Email addresses are limited to %(n)d characters.") % {"n": MAX_EMAIL_LENGTH},
            field="email",
        )
    try:
        validate_email(email)
    except ValidationError:
        raise InvalidInput(_("Enter a valid email address."), field="email") from None
    return email


def access_request_create(
    *, email: str, name: str, references: str, body: str, ip_address: str, language: str
) -> AccessRequest:
    """Store a signed-out request for help signing in, and acknowledge it by e-mail.

    Throttled per address and per network before anything is stored; the work done and
    the e-mail sent are the same whether or not an account has this address.
    """
    email = _email(email)
    name = _text(name, field="name", limit=NAME_MAX, required=True)
    references = _text(references, field="references", limit=REFERENCES_MAX)
    body = _text(body, field="body", limit=ACCESS_BODY_MAX, required=True)
    # Counted before storing: a burst stores at most the limit.
    throttle.attempt(
        "access_ip", ip_address, message=_("Too many sign-in help requests from your network.")
    )
    try:
        throttle.attempt(
            "access_email",
            email,
            message=_("A request for this address was sent recently; support will answer it."),
        )
    except Throttled:
        throttle.refund("access_ip", ip_address)
        raise
    clean = _Cleaner(())
    name, references, body = clean(name), clean(references), clean(body)
    now = clock.now()
    with transaction.atomic():
        request = AccessRequest.objects.create(
            email=email,
            name=name,
            references=references,
            body=body,
            redactions=clean.report(),
            language=language or "",
            ip_address=valid_ip(ip_address),
            status=AccessStatus.OPEN,
            created_at=now,
            updated_at=now,
        )
        audit_record(
            action="support.access_requested",
            target=request,
            after={"email": email},
            ip_address=ip_address,
        )
        notification_services.email_enqueue_to_address(
            to_email=email,
            language=language,
            first_name=name.split()[0][:80] if name.split() else "",
            event="access_request_received",
            context={"request_id": str(request.pk)[:8]},
            dedupe_key=f"access_request_received:{request.pk}",
        )
    return request


def access_reply(
    *, access_request: AccessRequest, author, body: str, status: str = AccessStatus.ANSWERED
) -> AccessReply:
    """Staff answer a request by e-mail to its address (the words cleaned of secrets)."""
    if status not in {AccessStatus.ANSWERED, AccessStatus.CLOSED}:
        raise InvalidInput(_("Choose the status after this reply."), field="status")
    body = _text(body, field="body", limit=ACCESS_BODY_MAX, required=True)
    clean = _Cleaner(())
    body = clean(body)
    now = clock.now()
    with transaction.atomic():
        access_request = AccessRequest.objects.select_for_update().get(pk=access_request.pk)
        reply = AccessReply.objects.create(
            request=access_request,
            author=author,
            body=body,
            redactions=clean.report(),
            created_at=now,
        )
        before = access_request.status
        access_request.status = status
        access_request.last_staff_at = now
        access_request.updated_at = now
        access_request.save(update_fields=["status", "last_staff_at", "updated_at"])
        audit_record(
            action="support.access_replied",
            target=access_request,
            actor=author,
            before={"status": before},
            after={"status": status, "reply": reply.pk},
        )
        notification_services.email_enqueue_to_address(
            to_email=access_request.email,
            language=access_request.language,
            first_name=access_request.name.split()[0][:80] if access_request.name.split() else "",
            event="access_request_reply",
            context={"request_id": str(access_request.pk)[:8], "reply": body},
            dedupe_key=f"access_request_reply:{reply.pk}",
        )
    return reply


def access_password_link_send(*, access_request: AccessRequest, actor):
    """Staff, satisfied that the person owns the account, end every way into it and e-mail
    the account a single-use link to choose a new password.

    The old password stops working at once, every session is ended and every API token
    revoked (`accounts.services.password_reset_by_staff`); the link goes to the account's
    own address, never elsewhere, and dies when used or after PASSWORD_RESET_TIMEOUT.
    """
    account = selectors.account_for_access_request(access_request=access_request)
    if account is None:
        raise Conflict(_("No account has this address: there is no password to set."))
    with transaction.atomic():
        account = account_services.password_reset_by_staff(user=account, actor=actor)
        link_path = reverse(
            "accounts:password_new",
            args=[
                urlsafe_base64_encode(force_bytes(account.pk)),
                default_token_generator.make_token(account),
            ],
        )
        now = clock.now()
        AccessRequest.objects.filter(pk=access_request.pk).update(
            status=AccessStatus.ANSWERED, last_staff_at=now, updated_at=now
        )
        audit_record(
            action="support.access_password_link_sent",
            target=access_request,
            actor=actor,
            after={"account": account.pk},
        )
        notification_services.email_enqueue(
            account=account,
            event="access_password_link",
            context={
                "link_path": link_path,
                "valid_hours": max(1, settings.PASSWORD_RESET_TIMEOUT // 3600),
            },
            dedupe_key=f"access_password_link:{access_request.pk}:{now.isoformat()}",
        )
    return account
