import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

TOPUP_AMOUNTS = (100, 500, 2000, 10000)


class TopUpStatus(models.TextChoices):
    AWAITING_PAYMENT = "awaiting_payment", _("Awaiting payment")
    CREDITED = "credited", _("Credited")


class TopUp(models.Model):
    """A prepaid-balance top-up of a fixed amount, paid by its own payment intent(s)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="topups",
        verbose_name=_("account"),
    )
    amount_usd = models.DecimalField(
        max_digits=12, decimal_places=2, verbose_name=_("amount (USD)")
    )
    status = models.CharField(
        max_length=20,
        choices=TopUpStatus.choices,
        default=TopUpStatus.AWAITING_PAYMENT,
        verbose_name=_("status"),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"))
    credited_at = models.DateTimeField(null=True, blank=True, verbose_name=_("credited at"))

    class Meta:
        verbose_name = _("top-up")
        verbose_name_plural = _("top-ups")
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(amount_usd__in=TOPUP_AMOUNTS), name="ledger_topup_allowed_amounts"
            ),
        ]

    def __str__(self):
        return f"Top-up {self.amount_usd} USD ({self.status})"


class EntryKind(models.TextChoices):
    TOPUP_CREDIT = "topup_credit", _("Top-up")
    OVERPAYMENT_CREDIT = "overpayment_credit", _("Overpayment credited")
    LATE_PAYMENT_CREDIT = "late_payment_credit", _("Late payment credited")
    UNDERPAYMENT_CREDIT = "underpayment_credit", _("Underpayment credited")
    REVIEW_CREDIT = "review_credit", _("Payment credited after review")
    REFUND_CREDIT = "refund_credit", _("Refund")
    ADJUSTMENT = "adjustment", _("Adjustment by support")
    ORDER_CHARGE = "order_charge", _("Order paid from the balance")
    EXTENSION_CHARGE = "extension_charge", _("Extension paid from the balance")


CREDIT_KINDS = {
    EntryKind.TOPUP_CREDIT,
    EntryKind.OVERPAYMENT_CREDIT,
    EntryKind.LATE_PAYMENT_CREDIT,
    EntryKind.UNDERPAYMENT_CREDIT,
    EntryKind.REVIEW_CREDIT,
    EntryKind.REFUND_CREDIT,
}


class LedgerEntry(models.Model):
    """One line of an account's balance statement. Append-only: never updated or deleted.

    Entries of an account are numbered 1, 2, 3… (`sequence`, unique per account), and each
    carries the balance after it, which the database keeps at or above zero. Two writers
    that read the same last entry both try to write the same next number: one fails. So
    the balance cannot go negative even if the code around it erred.
    """

    account = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="ledger_entries",
        verbose_name=_("account"),
    )
    sequence = models.PositiveIntegerField(verbose_name=_("number"))
    kind = models.CharField(max_length=24, choices=EntryKind.choices, verbose_name=_("kind"))
    amount_usd = models.DecimalField(
        max_digits=12, decimal_places=2, verbose_name=_("amount (USD)")
    )
    balance_after_usd = models.DecimalField(
        max_digits=14, decimal_places=2, verbose_name=_("balance after (USD)")
    )
    created_at = models.DateTimeField(verbose_name=_("date"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("Who caused it; empty for the system (payment reconciliation)."),
        verbose_name=_("actor"),
    )
    # The cause: exactly what each kind needs (see the constraints).
    order = models.ForeignKey(
        "orders.Order",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("order"),
    )
    topup = models.ForeignKey(
        TopUp,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="entries",
        verbose_name=_("top-up"),
    )
    intent = models.ForeignKey(
        "payments.PaymentIntent",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="ledger_entries",
        verbose_name=_("payment"),
    )
    extension = models.ForeignKey(
        "support.Extension",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="ledger_entries",
        verbose_name=_("extension"),
    )
    memo = models.CharField(max_length=300, blank=True, verbose_name=_("memo"))

    class Meta:
        verbose_name = _("balance movement")
        verbose_name_plural = _("balance movements")
        permissions = [("adjust_balance", "Can credit a customer's balance")]
        ordering = ["account", "-sequence"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "sequence"], name="ledger_entry_sequence_once"
            ),
            models.CheckConstraint(
                condition=Q(balance_after_usd__gte=0), name="ledger_balance_never_negative"
            ),
            models.CheckConstraint(
                condition=Q(kind="order_charge", amount_usd__lt=0, order__isnull=False)
                | Q(kind="extension_charge", amount_usd__lt=0, extension__isnull=False)
                | Q(kind="adjustment") & ~Q(amount_usd=0)
                | Q(
                    kind__in=[
                        "topup_credit",
                        "overpayment_credit",
                        "late_payment_credit",
                        "underpayment_credit",
                        "review_credit",
                        "refund_credit",
                    ],
                    amount_usd__gt=0,
                ),
                name="ledger_entry_sign_by_kind",
            ),
            # One charge per order, one credit per cause.
            models.UniqueConstraint(
                fields=["order"],
                condition=Q(kind="order_charge"),
                name="ledger_one_charge_per_order",
            ),
            models.UniqueConstraint(
                fields=["extension"],
                condition=Q(kind="extension_charge"),
                name="ledger_one_charge_per_extension",
            ),
            models.UniqueConstraint(
                fields=["order"],
                condition=Q(kind="refund_credit"),
                name="ledger_one_refund_per_order",
            ),
            models.UniqueConstraint(
                fields=["topup"],
                condition=Q(kind="topup_credit"),
                name="ledger_one_credit_per_topup",
            ),
            models.UniqueConstraint(
                fields=["intent", "kind"],
                condition=Q(intent__isnull=False),
                name="ledger_one_credit_per_intent_and_kind",
            ),
            models.CheckConstraint(
                condition=~Q(kind="topup_credit") | Q(topup__isnull=False, intent__isnull=False),
                name="ledger_topup_credit_has_cause",
            ),
            models.CheckConstraint(
                condition=~Q(
                    kind__in=[
                        "overpayment_credit",
                        "late_payment_credit",
                        "underpayment_credit",
                        "review_credit",
                    ]
                )
                | Q(intent__isnull=False),
                name="ledger_payment_credit_has_intent",
            ),
            models.CheckConstraint(
                condition=~Q(kind="refund_credit") | Q(order__isnull=False),
                name="ledger_refund_has_order",
            ),
        ]

    def __str__(self):
        return f"{self.account} #{self.sequence} {self.kind} {self.amount_usd}"

    def save(self, *args, **kwargs):
        # Append-only: the one place where the invariant can be guarded for every caller.
        if not self._state.adding:
            raise TypeError("ledger entries are append-only: they are never updated")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise TypeError("ledger entries are append-only: they are never deleted")
