"""Reads for the operators' review queue and its case pages."""

import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from django.db.models import BooleanField, Case, OuterRef, Q, Subquery, Value, When
from django.utils.translation import gettext as _

from kernodeck.core import rows
from kernodeck.core.money import coin
from kernodeck.payments import reconciliation
from kernodeck.payments.methods import METHODS
from kernodeck.payments.models import (
    REVIEW_INTENT_CASES,
    REVIEW_TRANSFER_CASES,
    ChainState,
    IntentException,
    IntentStatus,
    PaymentIntent,
    Transfer,
)
from kernodeck.payments.watching.storing import COUNTED_KINDS

# Base-unit decimals of each (network, asset) pair the watchers store transfers of.
DECIMALS = {(spec.chain, spec.asset): spec.decimals for spec in METHODS}


def review_intents():
    """Intents waiting for a decision: reversals first (money already given out left the
    chain), then oldest first (read from payments_intent_review_idx: the filter is the
    index's condition, so the cost follows the open cases, not all)."""
    return (
        PaymentIntent.objects.filter(REVIEW_INTENT_CASES)
        .select_related("method", "order", "owner", "topup")
        .annotate(
            reversal_first=Case(
                When(exception=IntentException.REVERSED, then=Value(0)), default=Value(1)
            )
        )
        .order_by("reversal_first", "created_at")
    )


class ReviewIntentRow(NamedTuple):
    """A payment as the queue's page shows it: what its state (vocabulary.intent_state_key
    reads these names) and its reason need, its method's, order's, owner's and top-up's
    columns, no model instance."""

    id: uuid.UUID
    created_at: datetime
    status: str
    exception: str
    resolution: str
    review_reason: str
    reversed_base: Decimal
    closed_reason: str
    closed_at: datetime | None
    abandoned_at: datetime | None
    declared_at: datetime | None
    order_id: int | None
    method_asset: str
    method_network: str
    method_decimals: int
    order_reference: str | None
    owner_email: str
    topup_amount_usd: Decimal | None


class ReviewTransferRow(NamedTuple):
    """A stray transfer as the queue's page shows it."""

    id: int
    first_seen_at: datetime
    network: str
    asset: str
    txid: str
    address: str
    amount_base: Decimal
    kind: str


_INTENT_COLUMNS = (
    "id",
    "created_at",
    "status",
    "exception",
    "resolution",
    "review_reason",
    "reversed_base",
    "closed_reason",
    "closed_at",
    "abandoned_at",
    "declared_at",
    "order_id",
    "method__asset",
    "method__network",
    "method__decimals",
    "order__reference",
    "owner__email",
    "topup__amount_usd",
)
_TRANSFER_COLUMNS = ReviewTransferRow._fields

_REVIEW_INTENTS = rows.FixedList(
    rows=lambda: review_intents().values_list(*_INTENT_COLUMNS),
    count=lambda: PaymentIntent.objects.filter(REVIEW_INTENT_CASES).values_list("pk"),
    make=ReviewIntentRow._make,
)
_REVIEW_TRANSFERS = rows.FixedList(
    rows=lambda: review_transfers().values_list(*_TRANSFER_COLUMNS),
    count=lambda: Transfer.objects.filter(REVIEW_TRANSFER_CASES).values_list("pk"),
    make=ReviewTransferRow._make,
)


def review_intents_listed() -> rows.FixedList:
    """`review_intents` as ReviewIntentRow, for Paginator: the count and each page one
    fixed statement (`rows.FixedList`), a payment a tuple instead of five model
    instances."""
    return _REVIEW_INTENTS


def review_transfers_listed() -> rows.FixedList:
    """`review_transfers` as ReviewTransferRow, for Paginator, as the payments'."""
    return _REVIEW_TRANSFERS


def review_transfers():
    """Transfers at our addresses that no intent could take, oldest first (read from
    payments_transfer_review_idx, like review_intents)."""
    return Transfer.objects.filter(REVIEW_TRANSFER_CASES).order_by("first_seen_at")


def with_chain_tip(transfers):
    """The transfers with `chain_tip`: the last block height their network's watcher saw
    (ChainState.tip), read in the same query."""
    tip = ChainState.objects.filter(network=OuterRef("network")).values("tip")[:1]
    return transfers.annotate(chain_tip=Subquery(tip))


def confirmations_now(transfer: Transfer) -> int:
    """A transfer's confirmations counted from its block and the chain's stored tip (a
    `with_chain_tip` row): the stored count follows the tip only while the watcher
    refreshes that transfer."""
    tip = getattr(transfer, "chain_tip", None)
    if transfer.block_height is None or not tip or tip < transfer.block_height:
        return transfer.confirmations
    return max(transfer.confirmations, tip + 1 - transfer.block_height)


def transfer_amount_text(transfer: Transfer) -> str:
    """The transfer's amount in coins ("0,0123 BTC"); base units when the pair is unknown."""
    decimals = DECIMALS.get((transfer.network, transfer.asset))
    if decimals is None:
        return _("%(n)s base units of %(asset)s") % {
            "n": int(transfer.amount_base),
            "asset": transfer.asset,
        }
    return coin(int(transfer.amount_base), decimals, transfer.asset)


def transfers_shown(transfers) -> list[Transfer]:
    """The transfers with `amount_text` and `confirmations_now` for a page (one query)."""
    rows = list(with_chain_tip(transfers))
    for row in rows:
        row.amount_text = transfer_amount_text(row)
        row.confirmations_now = confirmations_now(row)
    return rows


@dataclass(frozen=True)
class Unconfirmed:
    """Counted transfers still short of the method's confirmations (a reversal risk)."""

    transfers: int
    fewest: int  # the fewest confirmations among them
    needed: int


def intent_unconfirmed(intent: PaymentIntent, *, transfers=None) -> Unconfirmed | None:
    """Whether deciding on `intent` now would count money that is not confirmed yet
    (`transfers`: its `with_chain_tip` rows, read here when not given)."""
    transfers = with_chain_tip(intent.transfers.all()) if transfers is None else transfers
    needed = intent.method.confirmations
    short = [
        confirmations_now(t)
        for t in transfers
        if t.kind in COUNTED_KINDS and t.disappeared_at is None and not t.final
    ]
    short = [n for n in short if n < needed]
    if not short:
        return None
    return Unconfirmed(transfers=len(short), fewest=min(short), needed=needed)


def _reason_words(code: str, amounts: dict[str, int], *, decimals: int, asset: str) -> str:
    coins = {name: coin(value, decimals, asset) for name, value in amounts.items()}
    if code == "overpaid":
        return _("Received %(received)s, %(extra)s more than due.") % coins
    if code == "overpaid_late":
        return _("A further %(extra)s came after the expiry.") % coins
    if code == "late_complete":
        return _("The amount due was complete only after the expiry.")
    if code == "late_short":
        return _("Received %(received)s after the expiry, less than due.") % coins
    return _("Received %(received)s of %(due)s before the expiry.") % coins


NOT_ALLOCATED = "Confirmed but not allocated: "
CLOSED_BEFORE = "Confirmed after its instructions were closed ("


def review_reason_display(intent: PaymentIntent) -> str:
    """Why the intent waits for an operator, in the active language with amounts in coins.

    The watcher stores the reason in English (`reconciliation.REASONS`, and the allocation
    refusals, written with the default language); any other stored text shows as it is.
    """
    return review_reason_text(
        exception=intent.exception,
        reversed_base=intent.reversed_base,
        review_reason=intent.review_reason,
        closed_reason=intent.closed_reason,
        decimals=intent.method.decimals,
        asset=intent.method.asset,
    )


def review_reason_text(
    *, exception: str, reversed_base, review_reason: str, closed_reason: str, decimals, asset
) -> str:
    """`review_reason_display` from the payment's columns and its method's (a queue's
    ReviewIntentRow has no model instance)."""
    if exception == IntentException.REVERSED:
        return _("Reversed after settlement: %(amount)s left the chain.") % {
            "amount": coin(int(reversed_base), decimals, asset)
        }
    stored = review_reason
    parsed = reconciliation.reason_parse(stored)
    if parsed is not None:
        code, amounts = parsed
        return _reason_words(code, amounts, decimals=decimals, asset=asset)
    if stored.startswith(CLOSED_BEFORE) and closed_reason:
        # As get_closed_reason_display: the choice's words, or the stored value.
        words = dict(PaymentIntent._meta.get_field("closed_reason").flatchoices)
        return _("Confirmed after its instructions were closed (%(why)s): not allocated.") % {
            "why": str(words.get(closed_reason, closed_reason)).lower()
        }
    if stored.startswith(NOT_ALLOCATED):
        why = stored[len(NOT_ALLOCATED) :]
        return _("Confirmed but not allocated: %(why)s") % {"why": _(why)}
    return stored


# At most this many payments are offered (those at the address come first).
CANDIDATES_MAX = 25


def transfer_candidate_intents(transfer: Transfer) -> list[PaymentIntent]:
    """The payments a stray transfer may be attached to, in one query: every one at its
    address first (`at_transfer_address`), then the newest open ones on its network in
    its asset (neither decided, closed nor allocated)."""
    at_address = Q(address=transfer.address)
    still_open = Q(resolution="", closed_at__isnull=True) & ~Q(status=IntentStatus.ALLOCATED)
    return list(
        PaymentIntent.objects.select_related("method", "order", "topup")
        .filter(chain=transfer.network, method__asset=transfer.asset)
        .filter(at_address | still_open)
        .annotate(
            at_transfer_address=Case(
                When(at_address, then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            )
        )
        .order_by("-at_transfer_address", "-created_at")[:CANDIDATES_MAX]
    )
