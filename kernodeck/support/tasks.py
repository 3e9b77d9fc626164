"""Background work of support: the e-mail that tells a customer staff replied."""

from huey.contrib.djhuey import db_task

from kernodeck.support import notices


@db_task()
def ticket_reply_email(ticket_id: str, message_id: int):
    """E-mail the ticket's owner that staff replied (a link only: the text stays on the site)."""
    notices.ticket_reply_send(ticket_id=ticket_id, message_id=message_id)
