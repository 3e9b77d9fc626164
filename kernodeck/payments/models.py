import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from kernodeck.orders.models import Order


class PaymentMethod(models.Model):
    """One asset + network pair. Rows come from `methods.METHODS`; operators toggle them."""

    code = models.SlugField(primary_key=True)
    asset = models.CharField(max_length=8)
    network = models.CharField(max_length=40)
    chain = models.CharField(max_length=16)
    decimals = models.PositiveSmallIntegerField(help_text="Base-unit decimals of the asset.")
    precision = models.PositiveSmallIntegerField(help_text="Decimals the amount is quoted to.")
    confirmations = models.PositiveSmallIntegerField()
    enabled = models.BooleanField(default=True)
    sort_order = models.PositiveSmallIntegerField(default=0)

    class Meta:
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
        return f"{self.asset} on {self.network}"


class Rate(models.Model):
    """An exchange rate: USD per coin, where it came from and when."""

    asset = models.CharField(max_length=8, db_index=True)
    usd_per_coin = models.DecimalField(max_digits=24, decimal_places=10)
    source = models.CharField(max_length=20)
    fetched_at = models.DateTimeField()
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The operator, for a manual rate.",
    )

    class Meta:
        ordering = ["-fetched_at", "-id"]
        indexes = [models.Index(fields=["asset", "-fetched_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(usd_per_coin__gt=0), name="payments_rate_positive"),
        ]

    def __str__(self):
        return f"{self.asset} {self.usd_per_coin} USD ({self.source}, {self.fetched_at:%Y-%m-%d %H:%M})"


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


class Purpose(models.TextChoices):
    ORDER = "order", _("Order")
    TOPUP = "topup", _("Top-up")


class PaymentIntent(models.Model):
    """One set of payment instructions: method, address, exact amount, expiry."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    purpose = models.CharField(max_length=8, choices=Purpose.choices)
    order = models.ForeignKey(
        Order, null=True, blank=True, on_delete=models.PROTECT, related_name="intents"
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="payment_intents"
    )
    method = models.ForeignKey(PaymentMethod, on_delete=models.PROTECT, related_name="intents")
    chain = models.CharField(max_length=16)
    testnet = models.BooleanField(default=False)
    address = models.CharField(max_length=100)
    wallet_fingerprint = models.CharField(max_length=16)
    derivation_index = models.PositiveIntegerField(null=True, blank=True)
    solana_reference = models.CharField(max_length=64, null=True, blank=True, unique=True)
    demo_wallet = models.BooleanField(default=False)

    # An integer of base units (wei can exceed 64 bits, hence a decimal with no places).
    amount_base = models.DecimalField(max_digits=40, decimal_places=0)
    amount_usd = models.DecimalField(max_digits=12, decimal_places=2)
    rate_usd_per_coin = models.DecimalField(max_digits=24, decimal_places=10)
    rate_source = models.CharField(max_length=20)
    rate_fetched_at = models.DateTimeField()
    uri = models.CharField(max_length=500)

    status = models.CharField(
        max_length=12, choices=IntentStatus.choices, default=IntentStatus.PENDING
    )
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    monitor_until = models.DateTimeField(help_text="Watched for late payments until then.")
    declared_at = models.DateTimeField(null=True, blank=True)
    abandoned_at = models.DateTimeField(null=True, blank=True)
    rescan_requested_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "monitor_until"])]
        constraints = [
            models.CheckConstraint(condition=Q(amount_base__gt=0), name="payments_intent_amount"),
            models.CheckConstraint(
                condition=Q(amount_usd__gt=0), name="payments_intent_amount_usd"
            ),
            models.CheckConstraint(
                condition=Q(purpose="order", order__isnull=False) | Q(purpose="topup"),
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
