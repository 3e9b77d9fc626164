from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils.translation import gettext_lazy as _


class OutboxStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    SENT = "sent", _("Sent")
    FAILED = "failed", _("Failed")


class OutboxMessage(models.Model):
    """One e-mail to one account (or to an address alone), rendered when it was enqueued
    and sent after commit.

    The row is the truth: the task queue only hurries it along, and the periodic sweep
    sends every pending row whose `next_attempt_at` has come, so a lost task or a worker
    outage delays an e-mail but never drops it. `dedupe_key` makes enqueueing idempotent.
    """

    dedupe_key = models.CharField(max_length=200, unique=True)
    # Empty for an answer to an address that may have no account (a signed-out "I can't
    # sign in" request): the row never says whether one exists.
    account = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="outbox_messages",
    )
    event = models.CharField(max_length=40)
    language = models.CharField(max_length=8)
    to_email = models.EmailField(max_length=254)
    subject = models.CharField(max_length=300)
    body_text = models.TextField()
    body_html = models.TextField(blank=True)
    context = models.JSONField(encoder=DjangoJSONEncoder, default=dict)
    status = models.CharField(
        max_length=10, choices=OutboxStatus.choices, default=OutboxStatus.PENDING
    )
    attempts = models.PositiveSmallIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField()
    next_attempt_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        permissions = [
            ("view_outbox", "Can view the e-mail outbox"),
            ("retry_outbox", "Can retry a failed e-mail"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=OutboxStatus.values),
                name="notifications_outbox_status_valid",
            ),
            models.CheckConstraint(
                condition=~models.Q(status=OutboxStatus.SENT) | models.Q(sent_at__isnull=False),
                name="notifications_outbox_sent_has_time",
            ),
        ]

    def __str__(self):
        return f"{self.event} → {self.to_email} ({self.status})"
