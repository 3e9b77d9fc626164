"""Reconciliation: an intent's state as a pure function of its transfers and the clock.

Modelled on BTCPay Server's invoice watcher: the state is recomputed from every observed
transfer on every run, so replays and restarts change nothing, and a late payment is
never dropped. Exceptions (underpaid, overpaid, late) never settle by themselves: they
wait for an operator.
"""

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_CEILING, Decimal

# Outcomes, the same words as IntentStatus values.
PENDING = "pending"
DETECTED = "detected"
CONFIRMED = "confirmed"
EXPIRED = "expired"
UNDERPAID = "underpaid"
OVERPAID = "overpaid"
LATE = "late"


# Why an exception waits for an operator: the stored form of each reason (English, amounts
# in base units) is one of these templates, so a page can read it back (`reason_parse`) and
# say it in the reader's language with amounts in coins (payments.review_selectors).
REASONS = {
    "overpaid": "received {received} base units, {extra} more than due",
    "overpaid_late": "a further {extra} base units came late",
    "late_complete": "the amount due was complete only after the expiry",
    "late_short": "received {received} base units after the expiry, less than due",
    "underpaid": "received {received} of {due} base units before the expiry",
}


def reason_text(code: str, **amounts: int) -> str:
    return REASONS[code].format(**amounts)


def _pattern(template: str) -> re.Pattern:
    parts = re.split(r"\{(\w+)\}", template)
    regex = "".join(
        f"(?P<{part}>-?\\d+)" if i % 2 else re.escape(part) for i, part in enumerate(parts)
    )
    return re.compile(regex)


_PATTERNS = {code: _pattern(template) for code, template in REASONS.items()}


def reason_parse(text: str) -> tuple[str, dict[str, int]] | None:
    """(code, amounts) of a stored reason made by `reason_text`; None for any other text."""
    for code, pattern in _PATTERNS.items():
        found = pattern.fullmatch(text or "")
        if found:
            return code, {name: int(value) for name, value in found.groupdict().items()}
    return None


@dataclass(frozen=True)
class Policy:
    """How strict to be. Defaults: 0.5 % or 1 USD of tolerance, whichever is larger."""

    confirmations: int
    tolerance_ratio: Decimal = Decimal("0.005")
    tolerance_usd: Decimal = Decimal("1.00")

    def __post_init__(self):
        if self.confirmations < 1:
            raise ValueError("confirmations are never zero")


@dataclass(frozen=True)
class Seen:
    """A transfer of the intent's own asset to its address (others never count)."""

    amount_base: int
    confirmations: int
    seen_at: datetime  # block time or first sighting, whichever is earlier
    final: bool = False


@dataclass(frozen=True)
class Due:
    amount_base: int
    amount_usd: Decimal
    usd_per_coin: Decimal
    decimals: int
    expires_at: datetime


@dataclass(frozen=True)
class Outcome:
    status: str
    received_base: int  # everything received, timely or not
    confirmed_base: int  # of which confirmed
    reason: str  # why an operator must look, for exceptions; empty otherwise

    @property
    def settles(self) -> bool:
        return self.status == CONFIRMED


def tolerance_base(due: Due, policy: Policy) -> int:
    """Underpayment tolerated, in base units: the larger of the ratio and the USD floor."""
    by_ratio = (Decimal(due.amount_base) * policy.tolerance_ratio).to_integral_value(
        rounding=ROUND_CEILING
    )
    by_usd = (
        policy.tolerance_usd / due.usd_per_coin * Decimal(10) ** due.decimals
    ).to_integral_value(rounding=ROUND_CEILING)
    return min(due.amount_base, int(max(by_ratio, by_usd)))


def reconcile(due: Due, transfers: list[Seen], *, now: datetime, policy: Policy) -> Outcome:
    """The status an intent should have now, from all the transfers seen at its address."""
    timely = [t for t in transfers if t.seen_at <= due.expires_at]
    late = [t for t in transfers if t.seen_at > due.expires_at]

    def is_confirmed(t):
        return t.final or t.confirmations >= policy.confirmations

    received = sum(t.amount_base for t in transfers)
    confirmed = sum(t.amount_base for t in transfers if is_confirmed(t))
    timely_paid = sum(t.amount_base for t in timely)
    minimum = due.amount_base - tolerance_base(due, policy)
    maximum = due.amount_base + tolerance_base(due, policy)

    def outcome(status, reason=""):
        return Outcome(status, received, confirmed, reason)

    if not transfers:
        return outcome(EXPIRED if now >= due.expires_at else PENDING)
    if received > maximum:
        return outcome(
            OVERPAID,
            reason_text("overpaid", received=received, extra=received - due.amount_base),
        )
    if timely_paid >= minimum:
        if late:
            # Paid in time, and something more came later: an operator decides about it.
            return outcome(OVERPAID, reason_text("overpaid_late", extra=received - timely_paid))
        if all(is_confirmed(t) for t in timely):
            return outcome(CONFIRMED)
        return outcome(DETECTED)
    if late and received >= minimum:
        return outcome(LATE, reason_text("late_complete"))
    if now >= due.expires_at:
        if late and not timely:
            return outcome(LATE, reason_text("late_short", received=received))
        return outcome(UNDERPAID, reason_text("underpaid", received=received, due=due.amount_base))
    # Part paid, the rest may still come before the expiry.
    return outcome(DETECTED)
