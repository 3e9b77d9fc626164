"""E-mail backends for tests: one whose SMTP server is always down."""

import smtplib

from django.core.mail.backends.base import BaseEmailBackend


class FailingBackend(BaseEmailBackend):
    """Every send fails the way a refused SMTP connection does."""

    def send_messages(self, email_messages):
        raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed (test)")
