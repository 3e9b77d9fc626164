"""Operator alerts: raised by the rental clock when something needs a person, e-mailed to
`ADMINS` (KERNODECK_ADMINS), optionally posted to a signed webhook, and listed on top of
the desk until acknowledged or resolved.

Every writer runs inside the caller's transaction; e-mail and webhook go after commit.
At most one open alert exists per `key` (a partial unique constraint), so a periodic check
that sees the same cause again raises nothing new.
"""

import hashlib
import hmac
import json
import logging
import urllib.request

from django.conf import settings
from django.core.mail import mail_admins
from django.db import IntegrityError, transaction

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.core.services import audit_record
from kernodeck.provisioning.models import Alert

logger = logging.getLogger(__name__)


def alert_raise(*, kind: str, key: str, message: str, action: str, node=None, order=None):
    """Open an alert for `key` unless one is open already; returns (alert, created)."""
    key = key[:200]
    open_alert = Alert.objects.filter(key=key, resolved_at__isnull=True).first()
    if open_alert is not None:
        return open_alert, False
    try:
        with transaction.atomic():
            alert = Alert.objects.create(
                kind=kind,
                key=key,
                node=node,
                order=order,
                message=message[:500],
                action=action[:500],
                created_at=clock.now(),
            )
    except IntegrityError:  # raised at the same moment by another worker
        return Alert.objects.get(key=key, resolved_at__isnull=True), False
    audit_record(
        action="provisioning.alert_raised",
        target=alert,
        after={"kind": kind, "key": key},
        data={"message": alert.message},
    )
    logger.error("alert %s: %s", key, alert.message)
    alert_id = alert.pk
    transaction.on_commit(lambda: alert_notify(alert_id=alert_id))
    return alert, True


def alert_resolve(*, key: str) -> int:
    """The cause is mended: close the open alert of `key` (if any)."""
    alerts = list(
        Alert.objects.select_for_update().filter(key=key[:200], resolved_at__isnull=True)
    )
    for alert in alerts:
        alert.resolved_at = clock.now()
        alert.save(update_fields=["resolved_at"])
        audit_record(action="provisioning.alert_resolved", target=alert, after={"key": key})
    return len(alerts)


def alert_acknowledge(*, alert_id: int, actor) -> Alert:
    """An operator took the alert in hand: it leaves the top of the desk."""
    with transaction.atomic():
        alert = Alert.objects.select_for_update().filter(pk=alert_id).first()
        if alert is None:
            raise Conflict("No such alert.")
        if alert.acknowledged_at is None:
            alert.acknowledged_at = clock.now()
            alert.acknowledged_by = actor if getattr(actor, "is_authenticated", False) else None
            alert.save(update_fields=["acknowledged_at", "acknowledged_by"])
            audit_record(action="provisioning.alert_acknowledged", target=alert, actor=actor)
    return alert


def alerts_open():
    """What the desk lists on top: neither acknowledged nor resolved, newest first."""
    return Alert.objects.filter(
        acknowledged_at__isnull=True, resolved_at__isnull=True
    ).select_related("node", "order")


def webhook_body(alert: Alert) -> bytes:
    return json.dumps(
        {
            "kind": alert.kind,
            "key": alert.key,
            "node": alert.node.name if alert.node_id else None,
            "order": alert.order.reference if alert.order_id else None,
            "message": alert.message,
            "action": alert.action,
            "raised_at": alert.created_at.isoformat(),
        },
        sort_keys=True,
    ).encode()


def webhook_signature(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def alert_notify(*, alert_id: int) -> None:
    """E-mail the admins, then post the webhook when one is set. Failures are logged, never
    raised: the alert stays on the desk whatever the mail server or the webhook does."""
    alert = Alert.objects.select_related("node", "order").filter(pk=alert_id).first()
    if alert is None:
        return
    subject = alert.get_kind_display()
    if alert.node_id:
        subject = f"{alert.node.name}: {subject}"
    mail_admins(str(subject), f"{alert.message}\n\n{alert.action}", fail_silently=True)
    url = settings.KERNODECK_ALERT_WEBHOOK_URL
    if not url.startswith(("http://", "https://")):
        return
    body = webhook_body(alert)
    request = urllib.request.Request(url, data=body, method="POST")  # noqa: S310 (http(s) only)
    request.add_header("Content-Type", "application/json")
    secret = settings.KERNODECK_ALERT_WEBHOOK_SECRET
    if secret:
        request.add_header("X-Kernodeck-Signature", webhook_signature(body, secret))
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            response.read(1000)
    except OSError as exc:
        logger.warning("alert webhook failed for %s: %s", alert.key, exc)
