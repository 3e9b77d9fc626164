"""Support tickets: threads between a customer and staff, tied to an order when it helps.

Every text stored here went through `redaction.redact` first: the database never holds
a secret a customer pasted by mistake.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from kernodeck.orders.models import Order


class Kind(models.TextChoices):
    EXTENSION = "extension", _("Extension or change of configuration")
    PROBLEM = "problem", _("Problem with a rental")
    PAYMENT = "payment", _("Payment question")
    ACCOUNT = "account", _("Account")
    OTHER = "other", _("Something else")


# Kinds that make no sense without the order they are about.
KINDS_NEEDING_ORDER = {Kind.EXTENSION, Kind.PAYMENT}


# How the guided forms' answers are labelled wherever they are shown.
FIELD_LABELS = {
    "when": _("When it happened"),
    "launch_command": _("Launch command"),
    "python_version": _("Python version"),
    "pytorch_version": _("PyTorch version"),
    "backend_version": _("CUDA or ROCm version"),
    "driver_version": _("Driver version"),
    "first_error": _("First full error"),
    "minimal_example": _("Minimal example"),
    "input_shapes": _("Input shapes"),
    "extra_days": _("Extra days"),
    "configuration": _("Configuration"),
    "deadline": _("Deadline"),
    "payment": _("Payment"),
    "sent": _("What was sent"),
    "network": _("Network"),
}
WHEN_LABELS = {
    "loading": _("While loading (model, data or environment)"),
    "first_computation": _("On the first computation"),
    "after_iterations": _("After several iterations"),
    "other": _("Other"),
}


class Status(models.TextChoices):
    """The labels are the customer's words ("waiting for you"); staff pages say
    STAFF_STATUS_LABELS."""

    OPEN = "open", _("Open")
    WAITING = "waiting", _("Waiting for you")
    ANSWERED = "answered", _("Answered")
    CLOSED = "closed", _("Closed")


# One wording of each status on every staff page (inbox, ticket header, reply and status
# forms): the staff wait for the customer where the customer reads "waiting for you".
STAFF_STATUS_LABELS = {
    Status.OPEN: _("Open"),
    Status.WAITING: _("Waiting for the customer"),
    Status.ANSWERED: _("Answered"),
    Status.CLOSED: _("Closed"),
}
STAFF_STATUS_CHOICES = [(status.value, label) for status, label in STAFF_STATUS_LABELS.items()]


# The allowed moves; `ticket_status_set` refuses every other one. A customer's message
# reopens any ticket; staff may move an open ticket anywhere.
STATUS_TRANSITIONS = {
    Status.OPEN: {Status.WAITING, Status.ANSWERED, Status.CLOSED},
    Status.WAITING: {Status.OPEN, Status.ANSWERED, Status.CLOSED},
    Status.ANSWERED: {Status.OPEN, Status.WAITING, Status.CLOSED},
    Status.CLOSED: {Status.OPEN},
}


class Ticket(models.Model):
    """A customer's request and its thread. Addressed by UUID: no guessable ids in URLs."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="tickets"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    order = models.ForeignKey(
        Order, null=True, blank=True, on_delete=models.PROTECT, related_name="tickets"
    )
    intent = models.ForeignKey(
        "payments.PaymentIntent",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="tickets",
        help_text="The payment a payment ticket is about.",
    )
    subject = models.CharField(max_length=200)
    fields = models.JSONField(default=dict, blank=True, help_text="The guided form's answers.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField()
    last_customer_at = models.DateTimeField(help_text="When the customer last wrote.")
    last_staff_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["status", "last_customer_at"])]
        permissions = [("answer_ticket", "Can answer support tickets in the staff inbox")]
        constraints = [
            models.CheckConstraint(
                condition=~Q(kind__in=["extension", "payment"]) | Q(order__isnull=False),
                name="support_ticket_order_for_kind",
            ),
            models.CheckConstraint(
                condition=Q(intent__isnull=True) | Q(order__isnull=False),
                name="support_ticket_intent_has_order",
            ),
        ]

    def __str__(self):
        return f"{self.get_kind_display()}: {self.subject}"


class Message(models.Model):
    """One message of a thread, already cleaned of secrets."""

    ticket = models.ForeignKey(Ticket, on_delete=models.CASCADE, related_name="messages")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    from_staff = models.BooleanField(default=False)
    body = models.TextField()
    redactions = models.JSONField(
        default=list, blank=True, help_text="What was removed: [{kind, label, count}]."
    )
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"{'staff' if self.from_staff else 'customer'} {self.created_at:%Y-%m-%d %H:%M}"


class Attachment(models.Model):
    """A small text or image file of a message, kept in the database and served only to the
    ticket's owner and staff (never from a public media URL)."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="attachments")
    name = models.CharField(max_length=120)
    content_type = models.CharField(max_length=40)
    size = models.PositiveIntegerField()
    data = models.BinaryField()
    redactions = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(size__lte=512 * 1024), name="support_attachment_small"
            ),
        ]

    def __str__(self):
        return self.name


class ExtensionStatus(models.TextChoices):
    REQUESTED = "requested", _("Requested")
    OFFERED = "offered", _("Offered")
    PAID = "paid", _("Paid")
    APPLIED = "applied", _("Applied")
    DECLINED = "declined", _("Declined")


EXTENSION_TRANSITIONS = {
    ExtensionStatus.REQUESTED: {ExtensionStatus.OFFERED, ExtensionStatus.DECLINED},
    ExtensionStatus.OFFERED: {
        ExtensionStatus.OFFERED,  # staff may revise an offer that nobody paid yet
        ExtensionStatus.PAID,
        ExtensionStatus.DECLINED,
    },
    ExtensionStatus.PAID: {ExtensionStatus.APPLIED},
    ExtensionStatus.APPLIED: set(),
    ExtensionStatus.DECLINED: set(),
}


class Extension(models.Model):
    """An extension request of an order and, once staff answer, its priced offer.

    requested -> offered (days, price, valid until) -> paid -> applied; or declined.
    Paid like an order: from the balance (one ledger charge, database-enforced) or with a
    payment whose purpose is `extension`. Only `applied` moves the rental's end.
    """

    ticket = models.ForeignKey(Ticket, on_delete=models.PROTECT, related_name="extensions")
    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="extensions")
    status = models.CharField(
        max_length=10, choices=ExtensionStatus.choices, default=ExtensionStatus.REQUESTED
    )
    requested_days = models.PositiveSmallIntegerField(null=True, blank=True)
    deadline = models.DateField(null=True, blank=True)
    days = models.PositiveSmallIntegerField(null=True, blank=True)
    price_usd = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    custom_price = models.BooleanField(default=False)
    valid_until = models.DateTimeField(null=True, blank=True)
    offered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    offered_at = models.DateTimeField(null=True, blank=True)
    decline_reason = models.TextField(blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    paid_by_payment = models.ForeignKey(
        "payments.PaymentIntent",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The crypto payment that paid it; empty when paid from the balance.",
    )
    applied_at = models.DateTimeField(null=True, blank=True)
    new_ends_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["requested", "declined"])
                | Q(days__gte=1, days__lte=90, price_usd__gt=0, valid_until__isnull=False),
                name="support_extension_offer_complete",
            ),
            # One extension in flight per order: two paid offers could not both apply.
            models.UniqueConstraint(
                fields=["order"],
                condition=Q(status__in=["requested", "offered", "paid"]),
                name="support_one_open_extension_per_order",
            ),
        ]

    def __str__(self):
        return f"Extension of {self.order_id}: {self.status}"


class AccessStatus(models.TextChoices):
    OPEN = "open", _("Open")
    ANSWERED = "answered", _("Answered")
    CLOSED = "closed", _("Closed")


class AccessRequest(models.Model):
    """A signed-out "I can't sign in" request: who writes, from which address, what they know.

    Its own kind in the staff inbox, apart from tickets (which belong to an account). It
    names no account: whether one has this address is looked up by staff only, so neither
    the row nor anything the person sees says it. Answered by e-mail to `email`. Texts are
    cleaned of secrets like a ticket's.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(max_length=254, help_text="As normalised for accounts.")
    name = models.CharField(max_length=300)
    references = models.TextField(
        blank=True, help_text="The order references or payments they remember."
    )
    body = models.TextField()
    redactions = models.JSONField(default=list, blank=True)
    language = models.CharField(max_length=8)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    status = models.CharField(
        max_length=10, choices=AccessStatus.choices, default=AccessStatus.OPEN
    )
    created_at = models.DateTimeField()
    last_staff_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["status", "created_at"])]
        permissions = [
            (
                "set_account_password",
                "Can end every way into an account and e-mail it a new-password link",
            )
        ]

    def __str__(self):
        return f"{self.email} ({self.status})"


class AccessReply(models.Model):
    """Staff's answer to an access request, e-mailed to its address (cleaned of secrets)."""

    request = models.ForeignKey(AccessRequest, on_delete=models.CASCADE, related_name="replies")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    body = models.TextField()
    redactions = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return f"reply {self.created_at:%Y-%m-%d %H:%M}"
