import uuid
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from kernodeck.orders.models import Order


class PaymentMethod(models.Model):
    """One asset + network pair. Rows come from `methods.METHODS`; operators toggle them."""

    code = models.SlugField(primary_key=True, verbose_name=_("code"))
    asset = models.CharField(max_length=8, verbose_name=_("asset"))
    network = models.CharField(max_length=40, verbose_name=_("network"))
    chain = models.CharField(max_length=16, verbose_name=_("chain"))
    decimals = models.PositiveSmallIntegerField(
        help_text=_("Base-unit decimals of the asset."), verbose_name=_("decimals")
    )
    precision = models.PositiveSmallIntegerField(
        help_text=_("Decimals the amount is quoted to."), verbose_name=_("precision")
    )
    confirmations = models.PositiveSmallIntegerField(verbose_name=_("confirmations"))
    enabled = models.BooleanField(default=True, verbose_name=_("enabled"))
    sort_order = models.PositiveSmallIntegerField(default=0, verbose_name=_("sort order"))

    class Meta:
        verbose_name = _("payment method")
        verbose_name_plural = _("payment methods")
        ordering = ["sort_order", "code"]
        constraints = [
            models.CheckConstraint(
                condition=Q(confirmations__gte=1), name="payments_method_confirmations_min_1"
            ),
            models.CheckConstraint(
                condition=Q(precision__lte=models.F("decimals")),
                name="payments_method_precision_within_decimals",
            ),
        ]

    def __str__(self):
        return gettext("%(asset)s on %(network)s") % {"asset": self.asset, "network": self.network}


class Rate(models.Model):
    """An exchange rate: USD per coin, where it came from and when."""

    asset = models.CharField(max_length=8, db_index=True, verbose_name=_("asset"))
    usd_per_coin = models.DecimalField(
        max_digits=24, decimal_places=10, verbose_name=_("USD per coin")
    )
    source = models.CharField(max_length=20, verbose_name=_("source"))
    fetched_at = models.DateTimeField(verbose_name=_("fetched at"))
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The operator, for a manual rate."),
        verbose_name=_("entered by"),
    )

    class Meta:
        verbose_name = _("exchange rate")
        verbose_name_plural = _("exchange rates")
        permissions = [("set_rate", "Can enter a manual exchange rate")]
        ordering = ["-fetched_at", "-id"]
        indexes = [models.Index(fields=["asset", "-fetched_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(usd_per_coin__gt=0), name="payments_rate_positive"),
        ]

    def __str__(self):
        when = f"{self.fetched_at:%Y-%m-%d %H:%M}"
        return f"{self.asset} {self.usd_per_coin} USD ({self.source}, {when})"


class AddressCounter(models.Model):
    """The next unused derivation index of one chain's watch-only key."""

    chain = models.CharField(max_length=16)
    wallet_fingerprint = models.CharField(max_length=16)
    next_index = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["chain", "wallet_fingerprint"], name="payments_counter_chain_wallet"
            ),
        ]

    def __str__(self):
        return f"{self.chain} {self.wallet_fingerprint}: next {self.next_index}"


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

# The review queue's cases: an exception, or confirmed with a reason to look, not yet decided.
# The selector and the partial index share this one condition (values sorted, so the SQL is
# the same text in both and PostgreSQL sees that the query implies the index's predicate).
REVIEW_INTENT_CASES = Q(resolution="") & (
    Q(status__in=sorted(EXCEPTION_STATUSES))
    | (Q(status=IntentStatus.CONFIRMED) & ~Q(review_reason=""))
)


class Resolution(models.TextChoices):
    SETTLED = "settled", _("Accepted and settled")
    CREDITED = "credited", _("Credited to the balance")
    REFUNDED = "refunded", _("Refunded off-platform")


class ClosedReason(models.TextChoices):
    """Why instructions were closed before they were paid: the order no longer needs them."""

    ORDER_SETTLED = "order_settled", _("The order was settled otherwise")
    ORDER_CANCELLED = "order_cancelled", _("The order was cancelled")


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


class TransferKind(models.TextChoices):
    MATCHED = "matched", _("Matched")
    LATE = "late", _("Late")
    WRONG_ASSET = "wrong_asset", _("Wrong asset")
    SPOOFED = "spoofed", _("Spoofed token")
    FAILED = "failed", _("Failed transaction")
    DUST = "dust", _("Dust")
    UNALLOCATED = "unallocated", _("Unallocated")


# Kinds an operator must look at (the review queue), besides intents in an exception.
# The largest amount a Transfer holds (chains.base.AMOUNT_COLUMN_MAX, the adapters' bound).
TRANSFER_AMOUNT_MAX = 10**39 - 1

REVIEW_KINDS = {TransferKind.WRONG_ASSET, TransferKind.UNALLOCATED}
# Review-queue transfers not yet decided (shared by the selector and the partial index).
REVIEW_TRANSFER_CASES = Q(kind__in=sorted(REVIEW_KINDS), review_resolved_at__isnull=True)


class Transfer(models.Model):
    """An on-chain credit seen at one of our addresses. Stored once, never forgotten."""

    network = models.CharField(max_length=16, verbose_name=_("network"))
    txid = models.CharField(max_length=100, verbose_name=_("transaction"))
    index = models.PositiveIntegerField(
        help_text=_("Output index or log index."), verbose_name=_("index")
    )
    address = models.CharField(max_length=100, db_index=True, verbose_name=_("address"))
    asset = models.CharField(max_length=8, verbose_name=_("asset"))
    token_contract = models.CharField(max_length=64, blank=True, verbose_name=_("token contract"))
    amount_base = models.DecimalField(
        max_digits=40, decimal_places=0, verbose_name=_("amount (base units)")
    )
    confirmations = models.PositiveIntegerField(default=0, verbose_name=_("confirmations"))
    block_height = models.PositiveBigIntegerField(
        null=True, blank=True, verbose_name=_("block height")
    )
    block_time = models.DateTimeField(null=True, blank=True, verbose_name=_("block time"))
    first_seen_at = models.DateTimeField(verbose_name=_("first seen at"))
    last_seen_at = models.DateTimeField(verbose_name=_("last seen at"))
    disappeared_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text=_("No longer reported (replaced or reorganised away)."),
        verbose_name=_("disappeared at"),
    )
    failed = models.BooleanField(default=False, verbose_name=_("failed"))
    final = models.BooleanField(default=False, verbose_name=_("final"))
    reference = models.CharField(max_length=64, blank=True, verbose_name=_("reference"))
    intent = models.ForeignKey(
        PaymentIntent,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="transfers",
        verbose_name=_("payment"),
    )
    kind = models.CharField(max_length=12, choices=TransferKind.choices, verbose_name=_("kind"))
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The operator who recorded it by hand; empty when a watcher saw it."),
        verbose_name=_("recorded by"),
    )
    review_resolved_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("review decided at")
    )
    review_note = models.TextField(blank=True, verbose_name=_("review note"))

    class Meta:
        verbose_name = _("transfer")
        verbose_name_plural = _("transfers")
        ordering = ["first_seen_at", "id"]
        indexes = [
            # The review queue's second list: a handful of open cases among all transfers.
            models.Index(
                fields=["first_seen_at"],
                condition=REVIEW_TRANSFER_CASES,
                name="payments_transfer_review_idx",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["network", "txid", "index"], name="payments_transfer_once"
            ),
            models.CheckConstraint(
                condition=Q(amount_base__gte=0), name="payments_transfer_amount"
            ),
            # What a page can show: SQLite keeps numbers past 2**63 as floats, and one that
            # rounds to 41 digits can no longer be read into the Decimal(40, 0) field.
            models.CheckConstraint(
                condition=Q(amount_base__lte=Decimal(TRANSFER_AMOUNT_MAX)),
                name="payments_transfer_amount_max",
            ),
        ]

    def __str__(self):
        return f"{self.network} {self.txid}:{self.index}"

    @property
    def seen_at(self):
        """When it happened for timeliness: the block time or first sighting, earlier wins."""
        if self.block_time is None:
            return self.first_seen_at
        return min(self.block_time, self.first_seen_at)


class ChainState(models.Model):
    """Health and scan cursor of one network's watcher."""

    network = models.CharField(max_length=16, primary_key=True, verbose_name=_("network"))
    tip = models.PositiveBigIntegerField(default=0, verbose_name=_("tip"))
    tip_changed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("tip changed at"))
    cursor = models.PositiveBigIntegerField(null=True, blank=True, verbose_name=_("cursor"))
    # Block scanning (Esplora): the last blocks scanned, newest last, as [height, hash]
    # pairs; a reorg shows as a hash that no longer matches, and the scan walks back.
    scanned_blocks = models.JSONField(default=list, blank=True, verbose_name=_("scanned blocks"))
    # When the intents kept only for late payments were last polled address by address.
    late_polled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("late polled at"))
    last_success_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("last success at")
    )
    last_error_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last error at"))
    last_error = models.TextField(blank=True, verbose_name=_("last error"))

    class Meta:
        verbose_name = _("chain state")
        verbose_name_plural = _("chain states")

    def __str__(self):
        return f"{self.network} at {self.tip}"
