"""From the queue to access: queue, prepare, deliver, fail, retry, or refund instead.

The moves of a rental before its customer has access, and the two ways out when it cannot
be served: a retry (same slots or new ones) or a refund to the balance. Delivered rentals
continue in `services.running`; slot releases are `services.releases`.
"""

import re
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernodeck.accounts.models import SshKey
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.ledger import services as ledger_services
from kernodeck.orders.models import RENTAL_TRANSITIONS, Order, RentalState
from kernodeck.provisioning import alerts, node_health, secrets
from kernodeck.provisioning.models import AlertKind, Delivery
from kernodeck.provisioning.services.moves import _lock_order, _move, _reason_required, _refuse
from kernodeck.provisioning.services.queueing import _enqueue, _enqueue_allocate_waiting
from kernodeck.provisioning.services.releases import _release_slots, _request_release

HOST_RE = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.\-:]{0,251}[A-Za-z0-9])?")
USER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9._\-]{0,31}")
URL_RE = re.compile(r"https?://[^\s\x00]+")
SOCKET_RE = re.compile(r"/[A-Za-z0-9._/\-]{1,199}")
REFUNDABLE_STATES = {RentalState.QUEUED, RentalState.PROVISIONING_FAILED}


def rental_queue(*, order: Order, actor=None) -> Order:
    """A settled order enters the queue; a task allocates its slots after commit.

    Called by `orders.services.order_settle` inside its transaction, on the locked order.
    """
    if order.rental_state == RentalState.QUEUED:
        return order
    order = _move(
        order,
        to=RentalState.QUEUED,
        actor=actor,
        reason=str(_("Waiting for GPUs to be allocated.")),
    )
    _enqueue("rental_allocate_task", order.pk)
    return order


def rental_prepare(*, order, actor) -> Order:
    """Start preparing a queued order that holds its slots (also: retry on the same slots).

    The driver's prepare() runs after commit, from the task queue.
    """
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.PREPARING:
            return order
        if RentalState.PREPARING not in RENTAL_TRANSITIONS[order.rental_state]:
            _refuse(order, RentalState.PREPARING)
        if not order.allocations.filter(released_at__isnull=True).exists():
            raise Conflict(
                _("Rental %(reference)s holds no GPUs yet; it waits for free slots.")
                % {"reference": order.reference}
            )
        order = _move(
            order,
            to=RentalState.PREPARING,
            actor=actor,
            reason=str(_("Preparing the machine.")),
            notice="rental_preparing",
        )
        _enqueue("rental_prepare_task", order.pk)
    return order


def _clean_access(*, host, port, user, url) -> tuple[str, int, str, str]:
    host = str(host or "").strip()
    if not HOST_RE.fullmatch(host):
        raise InvalidInput(_("Give a host name or IP address."), field="host")
    try:
        port = int(str(port).strip()) if str(port).strip().isascii() else None
    except ValueError:
        port = None
    if port is None or not 1 <= port <= 65535:
        raise InvalidInput(_("The SSH port is a number from 1 to 65535."), field="port")
    user = str(user or "").strip()
    if not USER_RE.fullmatch(user):
        raise InvalidInput(
            _("The user name is 1 to 32 letters, digits, dots, dashes or underscores."),
            field="user",
        )
    url = str(url or "").strip()
    if url and (not URL_RE.fullmatch(url) or len(url) > 300):
        raise InvalidInput(_("The URL must start with http:// or https://."), field="url")
    return host, port, user, url


def rental_deliver(
    *, order, host, port, user, url: str = "", token: str = "", socket: str = "", actor
) -> Order:
    """Deliver access: record it (secret encrypted), start the clock, notify the customer.

    `socket` is the Unix socket on the node the service listens on (the customer's tunnel
    ends there instead of at a loopback port). Refused while the customer has no SSH public
    key: access is key-based only.
    """
    host, port, user, url = _clean_access(host=host, port=port, user=user, url=url)
    socket = str(socket or "").strip()
    if socket and (not SOCKET_RE.fullmatch(socket) or "/../" in f"{socket}/"):
        raise InvalidInput(_("The socket is an absolute path on the node."), field="socket")
    token = str(token or "").replace("\x00", "").strip()
    if len(token) > 500:
        raise InvalidInput(_("The token is too long."), field="token")
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state != RentalState.PREPARING:  # access is delivered once
            _refuse(order, RentalState.ACTIVE)
        if not SshKey.objects.filter(user_id=order.owner_id).exists():
            raise Conflict(
                _(
                    "The customer of %(reference)s has no SSH public key yet: access cannot "
                    "be delivered until they add one."
                )
                % {"reference": order.reference}
            )
        now = clock.now()
        delivery = Delivery.objects.create(
            order=order,
            host=host,
            port=port,
            user=user,
            url=url,
            remote_socket=socket,
            secret_ciphertext=secrets.secret_encrypt(token),
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            created_at=now,
        )
        order.starts_at = now
        order.ends_at = now + timedelta(days=order.days)
        order = _move(
            order,
            to=RentalState.ACTIVE,
            actor=actor,
            fields=("starts_at", "ends_at"),
            data={
                "delivery": delivery.pk,
                "host": host,
                "port": port,
                "user": user,
                "has_token": bool(token),
            },
            notice="rental_access_ready",
        )
    return order


def rental_fail(*, order, reason: str, actor, detail: str = "") -> Order:
    """Preparation failed (operator or driver): the slots stay held for a retry.

    `reason` is what the customer reads (order file, e-mail); `detail` is the operator's
    (a driver's words: node names, fingerprints, the agent's error), kept in the audit row
    for the desk and never shown to the customer.
    """
    reason = _reason_required(reason)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state == RentalState.PROVISIONING_FAILED:
            return order
        order = _move(
            order,
            to=RentalState.PROVISIONING_FAILED,
            actor=actor,
            reason=reason,
            data={"detail": str(detail)[:1000]} if detail else None,
            notice="rental_failed",
        )
        attempts = node_health.rental_failed_attempts(order)
        if attempts >= settings.KERNODECK_PROVISIONING_MAX_ATTEMPTS:
            alerts.alert_raise(
                kind=AlertKind.STEP_FAILED,
                key=f"step_failed:{order.reference}",
                order=order,
                message=_("Preparing %(reference)s failed %(count)d times.")
                % {"reference": order.reference, "count": attempts},
                action=_(
                    "Read its step log on the desk; refund it to the customer's balance "
                    "rather than retry again, or mend the node first."
                ),
            )
        return order


# What a customer reads when a driver step failed: what it means for them, nothing else.
MACHINE_FAILED = gettext_lazy(
    "The machine we prepared for you did not work out; we are preparing another one or "
    "will refund you to your balance."
)


def rental_retry(*, order, actor, new_slots: bool = False) -> Order:
    """Try a failed rental again: on the same slots (preparing) or on new ones (queued)."""
    if not new_slots:
        order_row = Order.objects.get(pk=getattr(order, "pk", order))
        if order_row.rental_state != RentalState.PROVISIONING_FAILED:
            _refuse(order_row, RentalState.PREPARING)
        return rental_prepare(order=order_row, actor=actor)
    with transaction.atomic():
        order = _lock_order(order)
        if order.rental_state != RentalState.PROVISIONING_FAILED:
            _refuse(order, RentalState.QUEUED)
        _release_slots(order)
        order = _move(
            order,
            to=RentalState.QUEUED,
            actor=actor,
            reason=str(_("Waiting for GPUs to be allocated.")),
            data={"new_slots": True},
        )
        _enqueue("rental_allocate_task", order.pk)
    return order


def rental_refund(*, order, reason: str, actor) -> Order:
    """Refund a rental that could not be served (queued or failed) to the customer's
    balance, once, and end it: its slots are freed."""

    reason = _reason_required(reason)
    order_row = Order.objects.get(pk=getattr(order, "pk", order))
    with transaction.atomic():
        # The account first, then the order: the lock order of paying with the balance.
        get_user_model().objects.select_for_update().get(pk=order_row.owner_id)
        order = _lock_order(order_row)
        if order.rental_state not in REFUNDABLE_STATES:
            raise Conflict(
                _(
                    "Rental %(reference)s is %(state)s: only a queued or failed rental is "
                    "refunded here."
                )
                % {
                    "reference": order.reference,
                    "state": order.get_rental_state_display().lower(),
                }
            )
        entry = ledger_services.balance_refund_order(order=order, actor=actor, reason=reason)
        released, pending = _request_release(order)
        Delivery.objects.filter(order=order, revoked_at__isnull=True).update(
            secret_ciphertext="", revoked_at=clock.now()
        )
        order = _move(
            order,
            to=RentalState.ENDED,
            actor=actor,
            reason=reason,
            data={
                "refund_entry": entry.pk,
                "slots_released": released,
                "release_pending": pending,
            },
            notice="rental_refunded",
        )
        if pending:
            _enqueue("rental_release_task", order.pk)
        if released:
            transaction.on_commit(_enqueue_allocate_waiting)
    return order
