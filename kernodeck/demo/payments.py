"""The demo-only payment panel's actions: pay the chain simulator, mine, end the window.

Each action asks the demo's chain simulator (kernodeck/demo/simulator/) over loopback to
include a transfer or mine blocks, then asks the chain's watcher for an early pass (the
task "I have paid" uses), so the payment page follows detected → confirmed → settled, or
lands in review (underpaid, overpaid, late). Nothing here runs outside demo mode.
"""

import httpx
from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import InvalidInput, NotFound, Unavailable
from kernodeck.core.services import audit_record
from kernodeck.demo.simulator import MAX_MINE
from kernodeck.payments import locks, reconciliation
from kernodeck.payments.models import PaymentIntent
from kernodeck.payments.tasks import watch_network

CONTROL_TIMEOUT = 5.0  # seconds; the simulator is on loopback
# What each "send" action pays, as a share of the amount asked (numerator, denominator).
SEND_SHARES = {"exact": (1, 1), "less": (3, 4), "more": (5, 4), "late": (1, 1)}
ACTIONS = (*SEND_SHARES, "expire", "mine_one", "mine_enough")


def demo_is_on() -> bool:
    return bool(settings.KERNODECK_DEMO)


def amount_to_send(*, intent: PaymentIntent, action: str) -> int:
    """Base units the action sends: the amount asked, or a share of it that is outside
    the reconciliation's tolerance, so "less" is always underpaid and "more" overpaid."""
    due = reconciliation.Due(
        amount_base=intent.amount_units,
        amount_usd=intent.amount_usd,
        usd_per_coin=intent.rate_usd_per_coin,
        decimals=intent.method.decimals,
        expires_at=intent.expires_at,
    )
    return send_amount(due=due, confirmations=intent.method.confirmations, action=action)


def send_amount(*, due: reconciliation.Due, confirmations: int, action: str) -> int:
    """The amount of `action` for what is due (pure, for the property test)."""
    numerator, denominator = SEND_SHARES[action]
    share = due.amount_base * numerator // denominator
    tolerance = reconciliation.tolerance_base(
        due, reconciliation.Policy(confirmations=confirmations)
    )
    if action == "less":
        return max(1, min(share, due.amount_base - tolerance - 1))
    if action == "more":
        return max(share, due.amount_base + tolerance + 1)
    return share


def blocks_to_confirm(intent: PaymentIntent) -> int:
    """Blocks "Mine N blocks" mines: the method's confirmations (at most one request's)."""
    return min(intent.method.confirmations, MAX_MINE)


def demo_intent_expire_now(*, intent: PaymentIntent, actor) -> PaymentIntent:
    """Move the payment window's end to now, so what comes next arrives after the expiry.

    The demo's stand-in for waiting half an hour. Audited like every change."""
    with transaction.atomic():
        intent = locks.lock_intent(intent.pk)
        now = clock.now()
        if intent.expires_at <= now:
            return intent
        before = {"expires_at": intent.expires_at.isoformat()}
        intent.expires_at = now
        intent.save(update_fields=["expires_at"])
        audit_record(
            action="demo.payment_window_ended",
            target=intent,
            actor=actor,
            before=before,
            after={"expires_at": intent.expires_at.isoformat()},
        )
    return intent


def demo_payment_simulate(*, intent: PaymentIntent, action: str, actor) -> dict:
    """Run one panel action on `intent` and request a watcher pass for its network."""
    if not demo_is_on():
        raise NotFound(_("This page exists only in the demo."))
    if action not in ACTIONS:
        raise InvalidInput(_("Unknown demo action."), field="action")
    if action in ("late", "expire"):
        intent = demo_intent_expire_now(intent=intent, actor=actor)
    if action in SEND_SHARES:
        payload = {
            "method": intent.method_id,
            "address": intent.address,
            "amount_base": amount_to_send(intent=intent, action=action),
        }
        if intent.solana_reference:
            payload["reference"] = intent.solana_reference
        answer = _control("pay", payload)
    elif action in ("mine_one", "mine_enough"):
        blocks = 1 if action == "mine_one" else blocks_to_confirm(intent)
        answer = _control("mine", {"network": intent.chain, "blocks": blocks})
    else:
        answer = {}
    _watch_soon(intent.chain)
    return answer


def _control(verb: str, payload: dict) -> dict:
    """POST to the simulator's control API (network I/O: call it with no lock held)."""
    base = settings.KERNODECK_DEMO_SIMULATOR_URL
    if not base:
        raise Unavailable(
            _("The demo's chain simulator is not running: start the demo with `kernodeck demo`.")
        )
    try:
        response = httpx.post(f"{base}/_control/{verb}", json=payload, timeout=CONTROL_TIMEOUT)
        body = response.json()
    except (httpx.HTTPError, ValueError):
        raise Unavailable(_("The demo's chain simulator does not answer.")) from None
    if response.status_code != 200 or not isinstance(body, dict):
        detail = body.get("error") if isinstance(body, dict) else ""
        raise Unavailable(
            _("The demo's chain simulator refused the request: %(why)s") % {"why": detail}
        )
    return body


def _watch_soon(network: str) -> None:
    watch_network(network)
