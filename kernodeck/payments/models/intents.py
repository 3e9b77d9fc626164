"""Payment intents: one set of payment instructions, with its statuses and decisions.

The status choices, the open and exception sets and the review-queue condition live beside
`PaymentIntent` because its indexes and constraints are written with them; the transfers that
pay an intent are in `transfers`.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from kernodeck.orders.models import Order
from kernodeck.payments.models.configuration import PaymentMethod


class IntentStatus(models.TextChoices):
    PENDING = "pending", _("Waiting for your payment")
    DETECTED = "detected", _("Payment seen, waiting for confirmations")
    CONFIRMED = "confirmed", _("Payment confirmed")
    ALLOCATED = "allocated", _("Payment allocated")
    EXPIRED = "expired", _("Expired")
    UNDERPAID = "underpaid", _("Underpaid: under review")
    OVERPAID = "overpaid", _("Overpaid: under review")
    LATE = "late", _("Paid late: under review")


OPEN_STATUSES = {IntentStatus.PENDING, IntentStatus.DETECTED}


EXCEPTION_STATUSES = {
    IntentStatus.UNDERPAID,
    IntentStatus.OVERPAID,
    IntentStatus.LATE,
}


class IntentException(models.TextChoices):
    """An exception kept beside the status (as BTCPay does): money the intent was allocated
    or decided on left the chain afterwards (a double spend in a reorg)."""

    REVERSED = "reversed", _("Reversed after settlement")


class ReversalDecision(models.TextChoices):
    """What an operator decided about a reversed payment (settlement.reversal)."""

    SUSPENDED = "suspended", _("Rental suspended (or the credit taken back)")
    REPAY = "repay", _("Customer asked to pay again")
    LOSS_ACCEPTED = "loss_accepted", _("Loss accepted")


# The review queue's cases: an exception, or confirmed with a reason to look, not yet decided;
# or a reversal not yet decided (whatever was decided before it: the money left afterwards).
# The selector and the partial index share this one condition (values sorted, so the SQL is
# the same text in both and PostgreSQL sees that the query implies the index's predicate).
REVIEW_INTENT_CASES = (
    Q(resolution="")
    & (
        Q(status__in=sorted(EXCEPTION_STATUSES))
        | (Q(status=IntentStatus.CONFIRMED) & ~Q(review_reason=""))
    )
) | (Q(exception=IntentException.REVERSED) & Q(reversal_decision=""))


class Resolution(models.TextChoices):
    SETTLED = "settled", _("Accepted and settled")
    CREDITED = "credited", _("Credited to the balance")
    REFUNDED = "refunded", _("Refunded off-platform")


class ClosedReason(models.TextChoices):
    """Why instructions were closed before they were paid: what they were for no longer
    needs them."""

    ORDER_SETTLED = "order_settled", _("The order was settled otherwise")
    ORDER_CANCELLED = "order_cancelled", _("The order was cancelled")
    OFFER_PAID = "offer_paid", _("The extension offer was paid otherwise")


class Purpose(models.TextChoices):
    ORDER = "order", _("Order")
    TOPUP = "topup", _("Top-up")
    EXTENSION = "extension", _("Rental extension")


class PaymentIntent(models.Model):
    """One set of payment instructions: method, address, exact amount, expiry."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    purpose = models.CharField(max_length=12, choices=Purpose.choices, verbose_name=_("purpose"))
    order = models.ForeignKey(
        Order,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="intents",
        verbose_name=_("order"),
    )
    topup = models.ForeignKey(
        "ledger.TopUp",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="intents",
        verbose_name=_("top-up"),
    )
    extension = models.ForeignKey(
        "support.Extension",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="intents",
        verbose_name=_("extension"),
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="payment_intents",
        verbose_name=_("customer"),
    )
    method = models.ForeignKey(
        PaymentMethod, on_delete=models.PROTECT, related_name="intents", verbose_name=_("method")
    )
    chain = models.CharField(max_length=16, verbose_name=_("chain"))
    testnet = models.BooleanField(default=False, verbose_name=_("testnet"))
    address = models.CharField(max_length=100, verbose_name=_("address"))
    wallet_fingerprint = models.CharField(max_length=16, verbose_name=_("wallet fingerprint"))
    derivation_index = models.PositiveIntegerField(
        null=True, blank=True, verbose_name=_("derivation index")
    )
    solana_reference = models.CharField(
        max_length=64, null=True, blank=True, unique=True, verbose_name=_("Solana reference")
    )
    demo_wallet = models.BooleanField(default=False, verbose_name=_("demo wallet"))

    # An integer of base units (wei can exceed 64 bits, hence a decimal with no places).
    amount_base = models.DecimalField(
        max_digits=40, decimal_places=0, verbose_name=_("amount (base units)")
    )
    amount_usd = models.DecimalField(
        max_digits=12, decimal_places=2, verbose_name=_("amount (USD)")
    )
    rate_usd_per_coin = models.DecimalField(
        max_digits=24, decimal_places=10, verbose_name=_("rate (USD per coin)")
    )
    rate_source = models.CharField(max_length=20, verbose_name=_("rate source"))
    rate_fetched_at = models.DateTimeField(verbose_name=_("rate fetched at"))
    uri = models.CharField(max_length=500, verbose_name=_("URI"))

    status = models.CharField(
        max_length=12,
        choices=IntentStatus.choices,
        default=IntentStatus.PENDING,
        verbose_name=_("status"),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"))
    expires_at = models.DateTimeField(verbose_name=_("expires at"))
    monitor_until = models.DateTimeField(
        help_text=_("Watched for late payments until then."), verbose_name=_("watched until")
    )
    declared_at = models.DateTimeField(null=True, blank=True, verbose_name=_("declared at"))
    abandoned_at = models.DateTimeField(null=True, blank=True, verbose_name=_("abandoned at"))
    # Closed: the order was settled by other means or cancelled, so nothing must be sent.
    # Like `declared_at`, a flag beside the status; the address stays watched.
    closed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("closed at"))
    closed_reason = models.CharField(
        max_length=16, choices=ClosedReason.choices, blank=True, verbose_name=_("closed because")
    )
    rescan_requested_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("rescan requested at")
    )
    # Reconciliation: what was received, and why an operator must look at it.
    received_base = models.DecimalField(
        max_digits=40, decimal_places=0, default=0, verbose_name=_("received (base units)")
    )
    confirmed_base = models.DecimalField(
        max_digits=40, decimal_places=0, default=0, verbose_name=_("confirmed (base units)")
    )
    review_reason = models.CharField(max_length=200, blank=True, verbose_name=_("review reason"))
    reconciled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("reconciled at"))
    # An operator's decision on an exception ends automatic changes to the status.
    resolution = models.CharField(
        max_length=20, choices=Resolution.choices, blank=True, verbose_name=_("decision")
    )
    resolution_reason = models.TextField(blank=True, verbose_name=_("decision reason"))
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("decided by"),
    )
    resolved_at = models.DateTimeField(null=True, blank=True, verbose_name=_("decided at"))
    # Reversed: counted money left the chain after the intent was allocated or decided
    # (`reversed_base` of what it stood on); the operator's decision closes the case.
    exception = models.CharField(
        max_length=12, choices=IntentException.choices, blank=True, verbose_name=_("exception")
    )
    reversed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("reversed at"))
    reversed_base = models.DecimalField(
        max_digits=40, decimal_places=0, default=0, verbose_name=_("reversed (base units)")
    )
    reversal_decision = models.CharField(
        max_length=16,
        choices=ReversalDecision.choices,
        blank=True,
        verbose_name=_("reversal decision"),
    )
    reversal_reason = models.TextField(blank=True, verbose_name=_("reversal decision reason"))
    reversal_decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("reversal decided by"),
    )
    reversal_decided_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("reversal decided at")
    )
    # A repayment: instructions for what the reversed payment `repays` stood on, after an
    # operator asked the customer to pay again (settlement.reversal); the order stays
    # settled, and what this one receives pays that amount again.
    repays = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="repayments",
        verbose_name=_("pays again for"),
    )

    class Meta:
        # Back-office permissions (see docs/architecture.md, "Back-office permissions").
        verbose_name = _("payment")
        verbose_name_plural = _("payments")
        permissions = [
            ("review_payment", "Can see and decide payment review cases"),
            ("record_transfer", "Can record a transfer seen outside the watchers"),
        ]
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "monitor_until"]),
            # The review queue, oldest first: only the open cases, a few among many intents.
            models.Index(
                fields=["created_at"],
                condition=REVIEW_INTENT_CASES,
                name="payments_intent_review_idx",
            ),
            # The chain watchers' lookups, each a few rows however many intents are watched:
            # the addresses a new block pays, the intents created since the last pass, the
            # open ones past their expiry, the rescans asked for.
            models.Index(fields=["chain", "address"], name="payments_intent_chain_addr"),
            models.Index(fields=["chain", "created_at"], name="payments_intent_chain_created"),
            models.Index(
                fields=["chain", "status", "expires_at"], name="payments_intent_chain_expiry"
            ),
            models.Index(
                fields=["chain", "rescan_requested_at"],
                condition=Q(rescan_requested_at__isnull=False),
                name="payments_intent_rescan",
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(amount_base__gt=0), name="payments_intent_amount"),
            models.CheckConstraint(
                condition=Q(amount_usd__gt=0), name="payments_intent_amount_usd"
            ),
            models.CheckConstraint(
                condition=Q(
                    purpose="order",
                    order__isnull=False,
                    topup__isnull=True,
                    extension__isnull=True,
                )
                | Q(
                    purpose="topup",
                    topup__isnull=False,
                    order__isnull=True,
                    extension__isnull=True,
                )
                | Q(
                    purpose="extension",
                    extension__isnull=False,
                    order__isnull=True,
                    topup__isnull=True,
                ),
                name="payments_intent_order_purpose",
            ),
            # An address is handed out once: never to two intents (Solana shares one
            # recipient and tells intents apart by their reference key instead).
            models.UniqueConstraint(
                fields=["chain", "address"],
                condition=~Q(chain="solana"),
                name="payments_intent_address_once",
            ),
            models.UniqueConstraint(
                fields=["chain", "wallet_fingerprint", "derivation_index"],
                condition=Q(derivation_index__isnull=False),
                name="payments_intent_index_once",
            ),
            models.CheckConstraint(
                condition=Q(closed_at__isnull=True, closed_reason="")
                | Q(closed_at__isnull=False, closed_reason__in=ClosedReason.values),
                name="payments_intent_closed_with_reason",
            ),
            models.CheckConstraint(
                condition=Q(exception="", reversed_at__isnull=True, reversal_decision="")
                | Q(exception="reversed", reversed_at__isnull=False),
                name="payments_intent_reversed_at",
            ),
            models.CheckConstraint(
                condition=Q(chain="solana", solana_reference__isnull=False)
                | (~Q(chain="solana") & Q(derivation_index__isnull=False)),
                name="payments_intent_has_reference_or_index",
            ),
        ]

    def __str__(self):
        return f"{self.method_id} {self.id}"

    @property
    def amount_units(self) -> int:
        return int(self.amount_base)
