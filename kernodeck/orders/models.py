from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from kernodeck.catalog.models import DURATIONS, MAX_UNITS, MIN_UNITS, Backend, Offer, Preparation


class PaymentState(models.TextChoices):
    AWAITING_PAYMENT = "awaiting_payment", _("Awaiting payment")
    SETTLED = "settled", _("Settled")
    CANCELLED = "cancelled", _("Cancelled")


class RentalState(models.TextChoices):
    NOT_STARTED = "not_started", _("Not started")
    QUEUED = "queued", _("Queued")
    PREPARING = "preparing", _("Preparing")
    ACTIVE = "active", _("Active")
    ENDED = "ended", _("Ended")
    PROVISIONING_FAILED = "provisioning_failed", _("Provisioning failed")
    SUSPENDED = "suspended", _("Suspended")


# The allowed moves; services refuse every other one.
PAYMENT_TRANSITIONS = {
    PaymentState.AWAITING_PAYMENT: {PaymentState.SETTLED, PaymentState.CANCELLED},
    PaymentState.SETTLED: set(),
    PaymentState.CANCELLED: set(),
}
RENTAL_TRANSITIONS = {
    RentalState.NOT_STARTED: {RentalState.QUEUED},
    # Queued: waiting for free slots, then for preparation. A queued order that cannot be
    # served is refunded, which ends it.
    RentalState.QUEUED: {
        RentalState.PREPARING,
        RentalState.PROVISIONING_FAILED,
        RentalState.ENDED,
    },
    RentalState.PREPARING: {RentalState.ACTIVE, RentalState.PROVISIONING_FAILED},
    RentalState.ACTIVE: {RentalState.ENDED, RentalState.SUSPENDED},
    RentalState.SUSPENDED: {RentalState.ACTIVE, RentalState.ENDED},
    # Failed: retry on the same slots (preparing) or on new ones (queued), or refund (ended).
    RentalState.PROVISIONING_FAILED: {
        RentalState.PREPARING,
        RentalState.QUEUED,
        RentalState.ENDED,
    },
    RentalState.ENDED: set(),
}
# Rentals in these states no longer hold fleet units.
RELEASED_RENTAL_STATES = {RentalState.ENDED}


class Order(models.Model):
    """A customer's order: an immutable quote snapshot plus payment and rental states."""

    reference = models.CharField(max_length=16, unique=True, verbose_name=_("reference"))
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="orders",
        verbose_name=_("customer"),
    )
    offer = models.ForeignKey(
        Offer, on_delete=models.PROTECT, related_name="orders", verbose_name=_("offer")
    )

    # The quote at registration: written once, never updated.
    offer_slug = models.SlugField(verbose_name=_("offer slug"))
    gpu_model = models.CharField(max_length=80, verbose_name=_("GPU model"))
    backend = models.CharField(max_length=8, choices=Backend.choices, verbose_name=_("backend"))
    memory_gib = models.PositiveIntegerField(verbose_name=_("memory (GiB)"))
    gpus_per_unit = models.PositiveSmallIntegerField(verbose_name=_("GPUs per unit"))
    days = models.PositiveSmallIntegerField(verbose_name=_("days"))
    units = models.PositiveSmallIntegerField(verbose_name=_("units"))
    gpus = models.PositiveSmallIntegerField(verbose_name=_("GPUs"))
    preparation = models.CharField(
        max_length=16, choices=Preparation.choices, verbose_name=_("preparation")
    )
    unit_price_usd = models.DecimalField(
        max_digits=10, decimal_places=2, verbose_name=_("unit price (USD)")
    )
    total_usd = models.DecimalField(max_digits=12, decimal_places=2, verbose_name=_("total (USD)"))

    payment_state = models.CharField(
        max_length=20,
        choices=PaymentState.choices,
        default=PaymentState.AWAITING_PAYMENT,
        verbose_name=_("payment"),
    )
    rental_state = models.CharField(
        max_length=24,
        choices=RentalState.choices,
        default=RentalState.NOT_STARTED,
        verbose_name=_("rental"),
    )
    created_at = models.DateTimeField(verbose_name=_("registered at"))
    hold_until = models.DateTimeField(
        help_text=_("Unsettled orders hold their units until then."), verbose_name=_("held until")
    )
    settled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("settled at"))
    cancelled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("cancelled at"))
    starts_at = models.DateTimeField(null=True, blank=True, verbose_name=_("starts at"))
    ends_at = models.DateTimeField(null=True, blank=True, verbose_name=_("ends at"))
    rental_state_changed_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("rental state changed at")
    )
    # The moment the rental clock next owes this rental a reminder (set at the start and by
    # an extension, moved past each reminder stored, cleared at the end): a tick reads only
    # the rentals whose moment has come, never every rental ending soon.
    next_reminder_at = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("next reminder at")
    )
    rental_reason = models.CharField(
        max_length=300,
        blank=True,
        help_text=_("Why the rental is where it is (waiting for slots, failure, suspension)."),
        verbose_name=_("rental reason"),
    )

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-created_at"]),
            # Capacity (orders/capacity.py) counts only orders that still take units: these
            # partial indexes hold just those rows, so the count does not grow with the
            # history of settled-and-ended or cancelled orders.
            models.Index(
                fields=["offer", "hold_until"],
                condition=models.Q(payment_state=PaymentState.AWAITING_PAYMENT),
                name="orders_order_on_hold_idx",
            ),
            models.Index(
                fields=["offer"],
                condition=models.Q(payment_state=PaymentState.SETTLED)
                & ~models.Q(rental_state__in=sorted(RELEASED_RENTAL_STATES)),
                name="orders_order_live_rental_idx",
            ),
            # The rental clock's ticks (reminders, ends) read running rentals by their end.
            models.Index(
                fields=["ends_at"],
                condition=models.Q(rental_state__in=[RentalState.ACTIVE, RentalState.SUSPENDED]),
                name="orders_order_running_ends_idx",
            ),
            # The reminder tick reads the active rentals a reminder is owed to, by its moment.
            models.Index(
                fields=["next_reminder_at"],
                condition=models.Q(rental_state=RentalState.ACTIVE)
                & models.Q(next_reminder_at__isnull=False),
                name="orders_order_reminder_owed_idx",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(units__gte=MIN_UNITS, units__lte=MAX_UNITS),
                name="orders_order_units_range",
            ),
            models.CheckConstraint(
                condition=models.Q(days__in=DURATIONS), name="orders_order_days_allowed"
            ),
            models.CheckConstraint(
                condition=models.Q(gpus=models.F("gpus_per_unit") * models.F("units")),
                name="orders_order_gpus_match_units",
            ),
            models.CheckConstraint(
                condition=models.Q(unit_price_usd__gt=0, total_usd__gt=0),
                name="orders_order_amounts_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(payment_state__in=PaymentState.values),
                name="orders_order_payment_state_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(rental_state__in=RentalState.values),
                name="orders_order_rental_state_valid",
            ),
            # Only a settled order ever leaves "not started".
            models.CheckConstraint(
                condition=models.Q(rental_state=RentalState.NOT_STARTED)
                | models.Q(payment_state=PaymentState.SETTLED),
                name="orders_order_rental_needs_settlement",
            ),
        ]

    def __str__(self):
        return self.reference
