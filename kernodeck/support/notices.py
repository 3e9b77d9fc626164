"""The customer's e-mail about a staff reply. It carries a link, never the reply itself:
the thread stays behind the sign-in."""

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from kernodeck.support.models import Message


def ticket_reply_send(*, ticket_id, message_id) -> bool:
    message = (
        Message.objects.select_related("ticket", "ticket__owner")
        .filter(pk=message_id, ticket_id=ticket_id, from_staff=True)
        .first()
    )
    if message is None:
        return False
    ticket = message.ticket
    with translation.override(settings.LANGUAGE_CODE):
        path = reverse("support:detail", args=[ticket.pk])
        send_mail(
            subject=_("Support replied: %(subject)s") % {"subject": ticket.subject[:80]},
            message=_(
                "Support replied to your ticket “%(subject)s”. Read the answer and reply here: "
                "%(path)s"
            )
            % {"subject": ticket.subject, "path": path},
            from_email=None,
            recipient_list=[ticket.owner.email],
        )
    return True
