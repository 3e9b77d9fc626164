"""The fleet (nodes and their GPU slots), the slots a rental holds, and access deliveries.

The rental's state itself lives on `orders.Order` (`rental_state`, `starts_at`, `ends_at`),
next to the payment state, so one row says where an order stands; this app holds the
hardware side: which slots an order runs on, and what access was delivered for it.
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from kernodeck.catalog.models import Offer
from kernodeck.orders.models import Order

MAX_NODE_GPUS = 64


class NodeState(models.TextChoices):
    AVAILABLE = "available", _("Available")
    DRAINING = "draining", _("Draining")
    MAINTENANCE = "maintenance", _("Maintenance")
    RETIRED = "retired", _("Retired")


class DriverCode(models.TextChoices):
    MANUAL = "manual", _("Manual (operator)")
    SSH = "ssh", _("SSH (automated)")


class Node(models.Model):
    """A machine of the fleet: every GPU in it is of the offer it serves.

    Only `available` nodes take new rentals; `draining` ones finish what they run.
    """

    name = models.SlugField(max_length=64, unique=True, verbose_name=_("name"))
    offer = models.ForeignKey(
        Offer, on_delete=models.PROTECT, related_name="nodes", verbose_name=_("offer")
    )
    gpu_count = models.PositiveSmallIntegerField(verbose_name=_("GPU count"))
    host = models.CharField(
        max_length=253, help_text=_("SSH host customers connect to."), verbose_name=_("host")
    )
    port = models.PositiveIntegerField(default=22, verbose_name=_("port"))
    admin_user = models.CharField(
        max_length=32,
        blank=True,
        help_text=_("The account an automated driver logs in as."),
        verbose_name=_("admin user"),
    )
    driver = models.CharField(
        max_length=16, choices=DriverCode.choices, default="manual", verbose_name=_("driver")
    )
    state = models.CharField(
        max_length=16, choices=NodeState.choices, default="available", verbose_name=_("state")
    )
    state_reason = models.CharField(max_length=300, blank=True, verbose_name=_("state reason"))
    notes = models.TextField(blank=True, verbose_name=_("notes"))
    health = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("The last inspect() report."),
        verbose_name=_("health"),
    )
    health_checked_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("health checked at")
    )
    # An automated node earns its place in the catalog: it is created in maintenance and
    # enters service at its first successful inspection after its host key was accepted.
    commissioned_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text=_("First successful inspection with an accepted host key."),
        verbose_name=_("commissioned at"),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"))
    # The ssh driver: the host key an operator accepted (pinned), the one the node offers
    # when it differs or none is pinned yet, and how the agent runs on the node.
    host_key = models.CharField(
        max_length=1000,
        blank=True,
        help_text=_("Pinned SSH host key."),
        verbose_name=_("host key"),
    )
    host_key_offered = models.CharField(
        max_length=1000, blank=True, verbose_name=_("host key offered")
    )
    agent_dir = models.CharField(
        max_length=200, default="/var/lib/kernodeck", verbose_name=_("agent folder")
    )
    retention_hours = models.PositiveSmallIntegerField(
        default=0,
        help_text=_("Hours a finished rental's workspace is kept before it is wiped."),
        verbose_name=_("retention (hours)"),
    )
    recipes = models.JSONField(
        default=dict,
        blank=True,
        help_text=_("Preparation code -> shell run as the rental account."),
        verbose_name=_("recipes"),
    )
    torch_index_url = models.CharField(
        max_length=300, blank=True, verbose_name=_("PyTorch wheel source")
    )
    inference_model = models.CharField(
        max_length=200, blank=True, verbose_name=_("inference model")
    )

    class Meta:
        verbose_name = _("node")
        verbose_name_plural = _("nodes")
        ordering = ["offer__sort_order", "name"]
        permissions = [
            ("operate_rentals", "Can operate rentals and the fleet (provisioning desk)"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(gpu_count__gte=1, gpu_count__lte=MAX_NODE_GPUS),
                name="provisioning_node_gpu_count_range",
            ),
            models.CheckConstraint(
                condition=models.Q(port__gte=1, port__lte=65535),
                name="provisioning_node_port_range",
            ),
            models.CheckConstraint(
                condition=models.Q(state__in=NodeState.values),
                name="provisioning_node_state_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(driver__in=DriverCode.values),
                name="provisioning_node_driver_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(retention_hours__lte=8760),
                name="provisioning_node_retention_at_most_a_year",
            ),
        ]

    def __str__(self):
        return self.name


class GpuSlot(models.Model):
    """One GPU of a node, by its index on the node (what CUDA_VISIBLE_DEVICES names)."""

    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, related_name="slots", verbose_name=_("node")
    )
    index = models.PositiveSmallIntegerField(verbose_name=_("index"))
    uuid = models.CharField(
        max_length=64, blank=True, help_text=_("GPU UUID, if known."), verbose_name=_("UUID")
    )

    class Meta:
        verbose_name = _("GPU slot")
        verbose_name_plural = _("GPU slots")
        ordering = ["node", "index"]
        constraints = [
            models.UniqueConstraint(fields=["node", "index"], name="provisioning_slot_node_index"),
        ]

    def __str__(self):
        return f"{self.node.name}/{self.index}"


class Allocation(models.Model):
    """A slot held by an order's rental from allocation until it is released.

    The partial unique constraint is the guarantee: a slot holds at most one live rental,
    whatever the code above it does.
    """

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="allocations", verbose_name=_("order")
    )
    slot = models.ForeignKey(
        GpuSlot, on_delete=models.PROTECT, related_name="allocations", verbose_name=_("GPU slot")
    )
    unit = models.PositiveSmallIntegerField(
        help_text=_("Which unit of the order (0-based)."), verbose_name=_("unit")
    )
    allocated_at = models.DateTimeField(verbose_name=_("allocated at"))
    released_at = models.DateTimeField(null=True, blank=True, verbose_name=_("released at"))
    # On an automated node the slot stays held after the end until the node confirms the
    # release: `release_requested_at` is set at the end, `released_at` once confirmed.
    release_requested_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("release requested at")
    )
    release_attempts = models.PositiveIntegerField(default=0, verbose_name=_("release attempts"))
    release_error = models.CharField(
        max_length=300, blank=True, verbose_name=_("last release error")
    )

    class Meta:
        verbose_name = _("allocation")
        verbose_name_plural = _("allocations")
        ordering = ["order", "unit", "slot__node__name", "slot__index"]
        constraints = [
            models.UniqueConstraint(
                fields=["slot"],
                condition=models.Q(released_at__isnull=True),
                name="provisioning_allocation_one_live_rental_per_slot",
            ),
            # A release is confirmed only after it was asked for, never before.
            models.CheckConstraint(
                condition=models.Q(release_requested_at__isnull=True)
                | models.Q(released_at__isnull=True)
                | models.Q(released_at__gte=models.F("release_requested_at")),
                name="provisioning_allocation_release_after_request",
            ),
        ]
        indexes = [
            models.Index(fields=["order", "released_at"]),
            models.Index(
                fields=["release_requested_at"],
                condition=models.Q(release_requested_at__isnull=False, released_at__isnull=True),
                name="provisioning_alloc_pending_idx",
            ),
        ]

    def __str__(self):
        return f"{self.order.reference} → {self.slot}"


class Delivery(models.Model):
    """The access delivered for an order: who, when, where to connect. Never edited.

    The secret (notebook token, inference API key) is stored only as MultiFernet ciphertext
    (`provisioning.secrets`); when the rental ends the ciphertext is erased and
    `revoked_at` set — the one change a delivery ever sees.
    """

    order = models.ForeignKey(
        Order, on_delete=models.PROTECT, related_name="deliveries", verbose_name=_("order")
    )
    host = models.CharField(max_length=253, verbose_name=_("host"))
    port = models.PositiveIntegerField(verbose_name=_("port"))
    user = models.CharField(max_length=32, verbose_name=_("user"))
    url = models.CharField(
        max_length=300,
        blank=True,
        help_text=_("Notebook or inference URL."),
        verbose_name=_("URL"),
    )
    remote_socket = models.CharField(
        max_length=200,
        blank=True,
        help_text=_("The Unix socket on the node the service listens on; the tunnel ends there."),
        verbose_name=_("socket on the node"),
    )
    secret_ciphertext = models.TextField(blank=True, verbose_name=_("secret (encrypted)"))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The operator; empty when a driver delivered it."),
        verbose_name=_("delivered by"),
    )
    created_at = models.DateTimeField(verbose_name=_("delivered at"))
    revoked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("secrets erased at"))

    class Meta:
        verbose_name = _("delivery")
        verbose_name_plural = _("deliveries")
        ordering = ["-created_at", "-id"]
        permissions = [("view_access", "Can view customers' access details (audited)")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(port__gte=1, port__lte=65535),
                name="provisioning_delivery_port_range",
            ),
        ]

    def __str__(self):
        return f"{self.order.reference} @ {self.created_at:%Y-%m-%d %H:%M}"


class AlertKind(models.TextChoices):
    RELEASE_OVERDUE = "release_overdue", _("Release overdue")
    HOST_KEY_CHANGED = "host_key_changed", _("Host key changed")
    NODE_MAINTENANCE_LIVE = "node_maintenance_live", _("Node in maintenance with live rentals")
    STEP_FAILED = "step_failed", _("Step failed repeatedly")
    PAYMENT_REVERSED = "payment_reversed", _("Payment reversed after settlement")


class Alert(models.Model):
    """Something an operator must look at, listed on top of the desk until acknowledged
    (or until what caused it is mended: `resolved_at`).

    `key` names the cause ("release_overdue:KD-…:node"); at most one open alert per key,
    so a periodic check that sees the same cause again does not raise it twice.
    """

    kind = models.CharField(max_length=32, choices=AlertKind.choices, verbose_name=_("kind"))
    key = models.CharField(max_length=200, verbose_name=_("key"))
    node = models.ForeignKey(
        Node,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="alerts",
        verbose_name=_("node"),
    )
    order = models.ForeignKey(
        Order,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("order"),
    )
    message = models.CharField(max_length=500, verbose_name=_("message"))
    action = models.CharField(max_length=500, verbose_name=_("what to do"))
    created_at = models.DateTimeField(verbose_name=_("raised at"))
    resolved_at = models.DateTimeField(null=True, blank=True, verbose_name=_("resolved at"))
    acknowledged_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("acknowledged at")
    )
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("acknowledged by"),
    )

    class Meta:
        verbose_name = _("alert")
        verbose_name_plural = _("alerts")
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["key"],
                condition=models.Q(resolved_at__isnull=True),
                name="provisioning_alert_one_open_per_key",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=AlertKind.values),
                name="provisioning_alert_kind_valid",
            ),
        ]

    def __str__(self):
        return f"{self.kind}: {self.key}"


class StepLease(models.Model):
    """A driver step in flight: who runs it, since when, until when the lease holds.

    Taken when a worker starts a rental's step and dropped when it ends; a worker that dies
    leaves its lease to expire, and the sweep (`driving.steps_expired_sweep`) runs the step
    again — the agent answers from its own state, so a node that had finished says so.
    """

    order = models.OneToOneField(
        Order, on_delete=models.CASCADE, related_name="+", verbose_name=_("order")
    )
    step = models.CharField(max_length=16, verbose_name=_("step"))
    holder = models.CharField(max_length=200, verbose_name=_("held by"))
    since = models.DateTimeField(verbose_name=_("since"))
    until = models.DateTimeField(verbose_name=_("until"))

    class Meta:
        verbose_name = _("step lease")
        verbose_name_plural = _("step leases")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(until__gt=models.F("since")),
                name="provisioning_steplease_until_after_since",
            ),
        ]

    def __str__(self):
        return f"{self.step} of {self.order_id} by {self.holder}"


class GpuSample(models.Model):
    """One GPU's use at one moment, as the node's agent reported it to the reconcile.

    Per node and GPU index (not per rental): a rental's plot reads the samples of the slots
    it holds within its period. Bounded: at most one sample per GPU per
    KERNODECK_GPU_SAMPLE_SECONDS, dropped after KERNODECK_GPU_SAMPLE_RETENTION_HOURS.
    """

    node = models.ForeignKey(
        Node, on_delete=models.CASCADE, related_name="+", verbose_name=_("node")
    )
    index = models.PositiveSmallIntegerField(verbose_name=_("GPU index"))
    taken_at = models.DateTimeField(verbose_name=_("taken at"))
    utilization_pct = models.FloatField(null=True, verbose_name=_("utilisation (%)"))
    memory_used_mib = models.PositiveIntegerField(null=True, verbose_name=_("memory used (MiB)"))
    memory_total_mib = models.PositiveIntegerField(null=True, verbose_name=_("memory total (MiB)"))
    temperature_c = models.FloatField(null=True, verbose_name=_("temperature (°C)"))
    power_w = models.FloatField(null=True, verbose_name=_("power (W)"))

    class Meta:
        verbose_name = _("GPU use sample")
        verbose_name_plural = _("GPU use samples")
        constraints = [
            models.UniqueConstraint(
                fields=["node", "index", "taken_at"], name="provisioning_gpusample_one_per_moment"
            ),
        ]
        indexes = [models.Index(fields=["taken_at"], name="provisioning_gpusample_taken")]

    def __str__(self):
        return f"{self.node_id}/{self.index} at {self.taken_at:%Y-%m-%d %H:%M}"
