"""One status vocabulary for payment instructions: a state, its words and its badge colour.

Every page that shows a payment (its own page, the order file, the top-up, the back-office)
asks `intent_state` instead of combining status, resolution, declared and abandoned flags on
its own, so two pages never describe one payment differently. Decided states win: once an
operator decided a case, the page says the decision, not "under review". Tones are the badge
classes of site.css, one per meaning: ok (money arrived and counted), info (in progress),
warn (your move), bad (needs an operator or do not send), muted (over, nothing counted).
"""

from dataclasses import dataclass
from datetime import datetime

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from kernodeck.core import clock
from kernodeck.payments.models import IntentException, IntentStatus, Resolution

REVIEW_STATUSES = (IntentStatus.UNDERPAID, IntentStatus.OVERPAID, IntentStatus.LATE)


@dataclass(frozen=True)
class IntentState:
    key: str
    label: str
    tone: str


STATES = {
    "reversed": (_("Reversed after settlement"), "bad"),
    "decided_settled": (_("Accepted and settled"), "ok"),
    "decided_credited": (_("Credited to the balance"), "ok"),
    "decided_refunded": (_("Refunded off-platform"), "muted"),
    "allocated": (_("Confirmed and allocated"), "ok"),
    "confirmed": (_("Confirmed"), "ok"),
    "review": (_("Under review"), "bad"),
    "detected": (_("Seen on the blockchain"), "info"),
    "expired": (_("Expired"), "muted"),
    "closed": (_("Closed: do not send"), "bad"),
    "abandoned": (_("Abandoned"), "muted"),
    "declared": (_("Declared by you, awaiting verification"), "info"),
    "waiting": (_("Waiting for your transfer"), "warn"),
}


def intent_state_key(intent) -> str:
    """The one state a customer reads for these instructions, most decided first; money
    that left the blockchain after it counted (a reorganisation) says so above all."""
    if intent.exception == IntentException.REVERSED:
        return "reversed"
    if intent.resolution == Resolution.SETTLED:
        return "decided_settled"
    if intent.resolution == Resolution.CREDITED:
        return "decided_credited"
    if intent.resolution == Resolution.REFUNDED:
        return "decided_refunded"
    if intent.status == IntentStatus.ALLOCATED:
        return "allocated"
    if intent.status == IntentStatus.CONFIRMED:
        return "confirmed"
    if intent.status in REVIEW_STATUSES:
        return "review"
    if intent.status == IntentStatus.DETECTED:
        return "detected"
    if intent.status == IntentStatus.EXPIRED:
        return "expired"
    if intent.closed_at:
        return "closed"
    if intent.abandoned_at:
        return "abandoned"
    if intent.declared_at:
        return "declared"
    return "waiting"


def intent_state(intent) -> IntentState:
    key = intent_state_key(intent)
    label, tone = STATES[key]
    return IntentState(key=key, label=str(label), tone=tone)


# What the money did, once it counted or was decided, by the payment's purpose: an order is
# settled, a top-up credits the balance, an extension moves the rental's end. Said once
# here, so no page tells an extension's payer that their balance was credited.
OUTCOMES = {
    ("order", "settled"): _("Your order is settled."),
    ("topup", "settled"): _("Your balance is credited."),
    ("extension", "settled"): _("The extension is applied: your rental's end has moved."),
    ("order", "credited"): _(
        "The amount received is credited to your balance; the order is not paid by it."
    ),
    ("topup", "credited"): _("The amount received is credited to your balance."),
    ("extension", "credited"): _(
        "The amount received is credited to your balance; the extension is not paid by it."
    ),
    ("order", "refunded"): _(
        "The money was sent back to you outside Kernodeck; the order is not paid by it."
    ),
    ("topup", "refunded"): _(
        "The money was sent back to you outside Kernodeck; nothing is credited to your balance."
    ),
    ("extension", "refunded"): _(
        "The money was sent back to you outside Kernodeck; the extension is not paid by it."
    ),
}
# Money that counted and then left the blockchain (settlement.reversal): what it means for
# the customer while an operator decides, and once decided.
REVERSED_OUTCOMES = {
    "": _(
        "The payment that counted here left the blockchain in a reorganisation (a double "
        "spend). An operator is looking at it and will tell you what happens next; nothing "
        "changes until then."
    ),
    "suspended": _(
        "The payment that counted here left the blockchain in a reorganisation (a double "
        "spend): what it paid for is suspended (or its credit taken back from your balance)."
    ),
    "repay": _(
        "The payment that counted here left the blockchain in a reorganisation (a double "
        "spend): we will ask you to pay the amount again and tell you how; you can also "
        "write to support."
    ),
    "loss_accepted": _(
        "The payment that counted here left the blockchain in a reorganisation (a double "
        "spend); we accepted the loss and nothing changes for you."
    ),
    # An order's: its page gives new instructions for the amount (selectors.repayment_due).
    "repay_order": _(
        "The payment that counted here left the blockchain in a reorganisation (a double "
        "spend): please pay the amount again; the order's page gives new payment "
        "instructions for it. You can also write to support."
    ),
}
EXTENSION_NEW_END = _("The extension is applied: your rental now ends on %(end)s UTC.")

OUTCOME_OF_STATE = {
    "decided_settled": "settled",
    "allocated": "settled",
    "decided_credited": "credited",
    "decided_refunded": "refunded",
}


def intent_outcome(intent) -> str:
    """What this payment's money did, in words for its purpose; "" while nothing is done."""
    key = intent_state_key(intent)
    if key == "reversed":
        decision = intent.reversal_decision
        if decision == "repay" and intent.purpose == "order":
            decision = "repay_order"
        return str(REVERSED_OUTCOMES.get(decision, REVERSED_OUTCOMES[""]))
    outcome = OUTCOME_OF_STATE.get(key)
    if outcome is None:
        return ""
    if outcome == "settled" and intent.purpose == "extension":
        extension = intent.extension
        if extension is not None and extension.new_ends_at:
            return str(EXTENSION_NEW_END) % {
                "end": extension.new_ends_at.strftime("%Y-%m-%d %H:%M")
            }
    return str(OUTCOMES[(intent.purpose, outcome)])


# What money sent to instructions that can no longer be paid does, by what they pay for.
# The watchers keep counting the address until `monitor_until`: an exact payment arriving
# before the expiry still pays, even after "abandon" (nothing refuses it); anything else
# goes to an operator.
STILL_PAYS = {
    "order": _(
        "This address is still watched until %(until)s UTC. An exact payment arriving there "
        "before %(expiry)s UTC still settles the order by itself; any other amount, or a later "
        "one, goes to review by an operator. Nothing sent is lost."
    ),
    "extension": _(
        "This address is still watched until %(until)s UTC. An exact payment arriving there "
        "before %(expiry)s UTC still pays the extension offer by itself; any other amount, or "
        "a later one, goes to review by an operator. Nothing sent is lost."
    ),
    "topup": _(
        "This address is still watched until %(until)s UTC. An exact payment arriving there "
        "before %(expiry)s UTC still credits your balance by itself; any other amount, or a "
        "later one, goes to review by an operator. Nothing sent is lost."
    ),
}
ARRIVES_LATE = _(
    "This address is still watched until %(until)s UTC. Money arriving there now comes after "
    "the expiry and goes to review by an operator; it is not lost."
)


def _utc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def funds_sent_note(intent, *, now: datetime | None = None) -> str:
    """What money sent now to abandoned or expired instructions does, truthfully.

    "" while they are still payable (their page says how to pay), once closed (their page
    says do not send) or no longer watched, and once something arrived (the status says)."""
    now = now or clock.now()
    if intent.closed_at or intent.monitor_until <= now:
        return ""
    if intent.status not in (IntentStatus.PENDING, IntentStatus.EXPIRED):
        return ""
    if intent.expires_at > now:
        if not intent.abandoned_at:
            return ""
        purpose = "order" if intent.order_id else "extension" if intent.extension_id else "topup"
        return gettext(str(STILL_PAYS[purpose])) % {
            "until": _utc(intent.monitor_until),
            "expiry": _utc(intent.expires_at),
        }
    return gettext(str(ARRIVES_LATE)) % {"until": _utc(intent.monitor_until)}


def ended_rows(intent, *, now: datetime | None = None) -> list[tuple[str, datetime]]:
    """When unpayable instructions stopped being payable, as past times only: abandoned on,
    expired on (never an expiry still to come)."""
    now = now or clock.now()
    rows = []
    if intent.abandoned_at:
        rows.append((str(STATES["abandoned"][0]), intent.abandoned_at))
    if intent.expires_at <= now:
        rows.append((str(STATES["expired"][0]), intent.expires_at))
    return rows
