from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class AuditEvent(models.Model):
    """One row per state change or money movement: who, when, what, before and after.

    Rows are written by `core.services.audit_record` inside the transaction of the change
    they describe, and never updated or deleted.
    """

    created_at = models.DateTimeField(db_index=True, verbose_name=_("created at"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("Who did it; empty for the system (worker, watcher) or an anonymous visitor."),
        verbose_name=_("actor"),
    )
    action = models.CharField(max_length=64, db_index=True, verbose_name=_("action"))
    target_type = models.CharField(max_length=64, verbose_name=_("target type"))
    target_id = models.CharField(max_length=64, verbose_name=_("target id"))
    before = models.JSONField(default=dict, blank=True, verbose_name=_("before"))
    after = models.JSONField(default=dict, blank=True, verbose_name=_("after"))
    data = models.JSONField(default=dict, blank=True, verbose_name=_("data"))
    ip_address = models.GenericIPAddressField(null=True, blank=True, verbose_name=_("IP address"))

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["target_type", "target_id", "created_at"])]

    def __str__(self):
        when = f"{self.created_at:%Y-%m-%d %H:%M:%S}"
        return f"{when} {self.action} {self.target_type}:{self.target_id}"


class IdempotentAnswer(models.Model):
    """The first successful answer to an API money write sent with an `Idempotency-Key`.

    The row is inserted at the start of the write's own transaction and filled with the
    answer before it commits (`core.idempotency`): both exist, or neither does. A retry with
    the same key and the same request gets this answer again instead of a second write.
    """

    scope = models.CharField(
        max_length=64, help_text=_("SHA-256 of the credential the key belongs to.")
    )
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(
        max_length=64, help_text=_("SHA-256 of the method, path and body of the request.")
    )
    status = models.PositiveSmallIntegerField(default=0)
    content_type = models.CharField(max_length=100, blank=True)
    body = models.BinaryField(default=bytes)
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = _("idempotent answer")
        verbose_name_plural = _("idempotent answers")
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="idempotency_key_once_per_scope")
        ]

    def __str__(self):
        return f"{self.key} → {self.status}"
