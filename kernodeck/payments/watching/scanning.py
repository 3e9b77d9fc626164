"""What a pass asks the chain: the intents a network watches, the address-polling scan,
and the chain's health.

Steps (1) to (3) of a pass (see the package): load the watched intents as light rows, ask
the adapter (network I/O, no transaction open), store what it answered. The scan returns
what it saw as `Observed` and leaves step (4), reconciling, to the pass, which records the
chain's health only once that is applied. The block scan (`blocks`) builds on the rows,
targets and health kept here.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from kernodeck.core import clock
from kernodeck.payments.chains.base import ChainError, WatchTarget, checked_scan, scan_checked
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    Transfer,
    TransferKind,
)
from kernodeck.payments.watching import cursors as poll_cursors
from kernodeck.payments.watching import rotation
from kernodeck.payments.watching.storing import (
    transfers_mark_disappeared,
    transfers_store,
    unexplained_balances_record,
)

logger = logging.getLogger(__name__)

# Addresses per lookup among the watched intents: short enough that PostgreSQL probes the
# (chain, address) index rather than reading the whole table (it did at 500 of 20 000).
ADDRESS_CHUNK = 200


# -- which intents a network must watch ---------------------------------------------


# What a pass needs of every watched intent to ask the chain and to match what it answers;
# the whole intent is loaded only for those a transfer or the clock concerns.
WATCHED_FIELDS = (
    "pk",
    "address",
    "solana_reference",
    "amount_base",
    "expires_at",
    "status",
    "rescan_requested_at",
    "created_at",
)


def watched_rows(network: str, *, now, addresses=None, created_after=None) -> list:
    """The intents whose address is still watched (open ones and those inside monitoring)
    as light rows (named tuples of WATCHED_FIELDS): all of them in
    one query, or those at `addresses` (one query per ADDRESS_CHUNK) or created after
    `created_after`."""
    watched = PaymentIntent.objects.filter(chain=network, monitor_until__gt=now).order_by()
    if created_after is not None:
        watched = watched.filter(created_at__gt=created_after)
    if addresses is None:
        return list(watched.values_list(*WATCHED_FIELDS, named=True))
    addresses = sorted(addresses)
    rows = []
    for start in range(0, len(addresses), ADDRESS_CHUNK):
        chunk = watched.filter(address__in=addresses[start : start + ADDRESS_CHUNK])
        rows.extend(chunk.values_list(*WATCHED_FIELDS, named=True))
    return rows


def watched_addresses(network: str, *, now) -> list[str]:
    """Only the addresses of the watched intents (a block scan needs no more of them)."""
    return list(
        PaymentIntent.objects.filter(chain=network, monitor_until__gt=now)
        .order_by()
        .values_list("address", flat=True)
    )


def watched_count(network: str, *, now) -> int:
    """How many distinct addresses the network watches: what polling them all costs."""
    return (
        PaymentIntent.objects.filter(chain=network, monitor_until__gt=now)
        .order_by()
        .values("address")
        .distinct()
        .count()
    )


def watch_targets(network: str, intents) -> list[WatchTarget]:
    if network == "solana":
        targets = [WatchTarget(i.address, reference=i.solana_reference) for i in intents]
        recipients = {i.address for i in intents}
        # Also the bare recipient, for wallets that drop the reference key.
        return targets + [WatchTarget(address) for address in sorted(recipients)]
    return [WatchTarget(i.address) for i in intents]


# -- what a scan saw, and the chain's health ------------------------------------------------


@dataclass
class Observed:
    """What one scan saw and stored, for the pass to apply: the pks of the intents it
    concerns, the health to record once they are reconciled (`_health_record` arguments),
    the pass's report, and what to remember after that (a block scan's mempool)."""

    touched: set
    health: dict
    report: dict
    remember: Callable[[], None] | None = None


def _health_record(
    network: str,
    *,
    tip=None,
    cursor=None,
    late_polled_at=None,
    scanned_blocks=None,
    rotation_after=None,
    error: str = "",
) -> None:
    with transaction.atomic():
        state, _created = ChainState.objects.select_for_update().get_or_create(network=network)
        now = clock.now()
        if error:
            state.last_error_at = now
            state.last_error = error[:1000]
        else:
            if tip is not None and tip != state.tip:
                state.tip = tip
                state.tip_changed_at = now
            state.cursor = cursor
            state.last_success_at = now
            if late_polled_at is not None:
                state.late_polled_at = late_polled_at
            if scanned_blocks is not None:
                state.scanned_blocks = scanned_blocks
            if rotation_after is not None:
                state.rotation_after = rotation_after
        state.save()


def _late_poll_due(state: ChainState | None, now) -> bool:
    """Whether this pass also polls the intents only in their late-payment window."""
    every = timedelta(seconds=settings.KERNODECK_WATCH_LATE_INTERVAL)
    return state is None or state.late_polled_at is None or now - state.late_polled_at >= every


def _polled_every_pass(intent: PaymentIntent, now) -> bool:
    """Open instructions, and any a customer just declared paid, are polled on every pass;
    those only kept for late payments (expired, under review, allocated), less often."""
    return (
        intent.expires_at > now
        or intent.status in (IntentStatus.PENDING, IntentStatus.DETECTED)
        or intent.rescan_requested_at is not None
    )


def _short(text: str) -> str:
    """An error for a one-line report: one line, bounded."""
    return " ".join(text.split())[:300]


# -- polling every watched address -----------------------------------------------------------


def _reorged_addresses(network: str, adapter, state, polled: set[str], now) -> set[str]:
    """The watched addresses outside `polled` with a stored transfer in the last
    `adapter.reorg_depth` blocks (below the tip last seen) whose block is no longer the
    chain's: its hash there differs, or the chain is no longer that high (Bitcoin and
    Litecoin by address polling, where transfers of intents kept only for late payments are
    polled every KERNODECK_WATCH_LATE_INTERVAL). One request per distinct block height, and
    none when there is no such transfer."""
    depth = getattr(adapter, "reorg_depth", 0)
    if not depth or not hasattr(adapter, "block_hashes") or state is None or not state.tip:
        return set()
    recent = (
        Transfer.objects.filter(
            network=network,
            disappeared_at__isnull=True,
            final=False,
            block_height__gt=state.tip - depth,
        )
        .exclude(block_hash="")
        .filter(Q(intent__isnull=True) | Q(intent__monitor_until__gt=now))
        .exclude(recorded_by__isnull=False)
        .exclude(kind=TransferKind.UNEXPLAINED)
        .values_list("address", "block_height", "block_hash")
    )
    recent = [row for row in recent if row[0] not in polled]
    if not recent:
        return set()
    canonical = adapter.block_hashes({height for _address, height, _hash in recent})
    moved = {address for address, height, hash_ in recent if canonical.get(height) != hash_}
    if moved:
        logger.info("%s: %d addresses had transfers in reorganised blocks", network, len(moved))
    return moved


def addresses_poll(network: str, adapter, state, *, now, in_turns: bool = True) -> Observed | dict:
    """Poll the watched addresses (those only kept for late payments every
    KERNODECK_WATCH_LATE_INTERVAL) and store what the chain reports; a dict report when
    the chain failed (its error is recorded).

    An adapter that asks one address at a time (Esplora; Tron) polls the open ones in
    turns within KERNODECK_WATCH_POLL_BUDGET (`rotation`: those near their expiry, paid
    or asked about on every pass, the others in turn); `in_turns=False` polls every open
    one, for a block scan that falls back to polling (Tron's: it skips the blocks since
    its cursor, which only the polls cover).

    An adapter that scans block windows (`follows_blocks`: Ethereum) is given every
    watched address on every pass, open, late-window, closed and decided alike: its cursor
    moves past each block it scans, so an address left out would never be looked at in
    those blocks again (and more addresses cost it nothing per block). Its answer also
    says which blocks it read: a stored transfer there that it did not report left the
    chain (a reorg). On the late interval it also reads every address's balance, for
    money no transfer explains (ETH forwarded by a contract)."""
    intents = watched_rows(network, now=now)
    late_due = _late_poll_due(state, now)
    follows_blocks = getattr(adapter, "follows_blocks", False)
    since = poll_cursors.polls_since(adapter)
    # Solana's `scan_since` reads the shared recipient once, whatever the number of targets:
    # every watched reference is given, so each payment is matched by the one it carries.
    every = follows_blocks or (since and network == "solana")
    turn = None
    if not every and in_turns and rotation.polls_in_turns(adapter):
        budget = settings.KERNODECK_WATCH_POLL_BUDGET
        turn = rotation.turn_choose(intents, state, now=now, late_due=late_due, budget=budget)
        polled = turn.polled
    else:
        every = every or late_due
        polled = [i for i in intents if every or _polled_every_pass(i, now)]
    cursor = state.cursor if state else None
    stored = poll_cursors.cursors_load(network) if since else {}
    try:
        # Network I/O, no lock held; every value is checked before anything is stored.
        if not follows_blocks and len(polled) < len(intents):
            # Addresses left out of this pass whose stored transfers sit in a block a reorg
            # replaced: polled now (their history says where the transfers went, if anywhere).
            moved = _reorged_addresses(network, adapter, state, {i.address for i in polled}, now)
            chosen = {i.pk for i in polled}
            polled += [i for i in intents if i.address in moved and i.pk not in chosen]
        # Even with nothing to watch, the scan reads the chain's tip: that is the health check.
        targets = watch_targets(network, polled)
        if follows_blocks:
            raw = adapter.scan(
                targets,
                cursor=cursor,
                blocks=state.scanned_blocks if state else [],
                balances=late_due,
            )
            result = checked_scan(adapter, targets, raw)
        elif since:
            result = poll_cursors.scan_since(network, adapter, targets, polled, state, stored)
        else:
            result = scan_checked(adapter, targets, cursor=cursor)
    except ChainError as exc:
        logger.warning("%s watcher failed: %s", network, exc)
        _health_record(network, error=str(exc))
        return {"network": network, "error": _short(str(exc))}

    touched = transfers_store(network, result.transfers, intents)
    addresses = {t.address for t in targets}
    seen_keys = {(t.txid, t.index) for t in result.transfers}
    if follows_blocks:
        if result.scanned_from is not None:
            touched |= transfers_mark_disappeared(
                network=network,
                addresses=addresses,
                seen_keys=seen_keys,
                blocks=(result.scanned_from, result.scanned_to),
                undecided=result.undecided,
            )
        touched |= unexplained_balances_record(
            network, result.balances, intents, block=result.balances_at
        )
    elif since:
        # Read from a cursor: only where the whole window since it was read can a stored
        # transfer that was not reported be gone (the cursor never passes what can change).
        touched |= transfers_mark_disappeared(
            network=network,
            addresses=addresses & result.complete,
            seen_keys=seen_keys,
            undecided=result.undecided,
        )
        touched |= poll_cursors.confirmations_follow_tip(
            network, addresses - result.complete, tip=result.tip, now=now
        )
    else:
        # An adapter without cursors reports an address's whole recent history each time;
        # a transaction it listed but could not describe yet is `undecided`: not gone.
        touched |= transfers_mark_disappeared(
            network=network,
            addresses=addresses,
            seen_keys=seen_keys,
            undecided=result.undecided,
        )
    rescanned = [i.pk for i in polled if i.rescan_requested_at is not None]
    if rescanned:
        PaymentIntent.objects.filter(pk__in=rescanned).update(rescan_requested_at=None)
    return Observed(
        touched=touched,
        health={
            "tip": result.tip,
            "cursor": result.cursor,
            "late_polled_at": now if late_due else None,
            "scanned_blocks": result.blocks,
            "rotation_after": turn.after if turn is not None else None,
        },
        report={
            "network": network,
            "watched": len(intents),
            "polled": len(polled),
            "transfers": len(result.transfers),
            **({"in_turn": turn.in_turn, "waiting": turn.waiting} if turn is not None else {}),
        },
        remember=(
            (
                lambda: poll_cursors.cursors_save(
                    network,
                    stored,
                    result.cursors,
                    prune={i.address for i in intents} if late_due else None,
                    complete=result.complete,
                )
            )
            if since
            else None
        ),
    )
