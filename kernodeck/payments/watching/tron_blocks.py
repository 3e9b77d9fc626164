"""Tron's block scan (with KERNODECK_WATCH_BLOCK_SCAN): a pass that reads the blocks since
its cursor instead of two TronGrid lists per watched address.

A pass reads the blocks from `ChainState.cursor` (the first block not read yet, or not
solidified when it was read) to the head (`TronAdapter.scan_block_range`), looks the
addresses they pay up among the watched intents (one query per ADDRESS_CHUNK: the cost
follows the blocks), stores what they hold for us, and moves the cursor to the block after
the solidified head: the blocks that can still change are read again next pass, so a
stored transfer there whose transaction is no longer in them left the chain (marked
disappeared, like the other chains'). Blocks below the solidified head are irreversible
and read once.

Every watched address is polled instead (`addresses_poll`, from the TronGrid cursors) on
the first pass, when the scan fails, when the chain no longer holds the block before the
cursor, and when more than KERNODECK_TRON_SCAN_MAX_BLOCKS blocks are behind and polling
costs fewer requests than reading them (otherwise that many are read a pass until the
scan has caught up); the scan then restarts a little before the solidified head.

What a block does not show is a token moved by another contract (a batch payout, a
multisig wallet, a router: the Transfer event is there, the call to our address is not).
Each block pass therefore also polls KERNODECK_TRON_SWEEP_ADDRESSES watched addresses
(their two lists, from their cursors), those swept longest ago first, and every address a
customer asked to look at again: every address is swept in turn, at 20 a pass and 10 000
watched addresses about every 500 passes (4 hours at one pass every 30 s).
"""

import logging

from django.conf import settings
from django.db.models import F, OuterRef, Q, Subquery

from kernodeck.core import clock
from kernodeck.payments.chains.base import ChainError, WatchTarget, checked_scan
from kernodeck.payments.models import PaymentIntent, PollCursor, Transfer, TransferKind
from kernodeck.payments.watching import cursors as poll_cursors
from kernodeck.payments.watching.blocks import _confirmations_refresh
from kernodeck.payments.watching.scanning import (
    WATCHED_FIELDS,
    Observed,
    addresses_poll,
    watched_count,
    watched_rows,
)
from kernodeck.payments.watching.storing import (
    _transfer_disappeared,
    transfers_mark_disappeared,
    transfers_store,
)

logger = logging.getLogger(__name__)


def tron_block_scanning(adapter) -> bool:
    """Whether this network's pass reads Tron blocks instead of polling each address."""
    return settings.KERNODECK_WATCH_BLOCK_SCAN and hasattr(adapter, "scan_block_range")


def sweep_rows(network: str, *, now, limit: int) -> list:
    """The watched intents whose addresses a block pass also polls: every one a customer
    asked to look at again, and `limit` more, those whose cursor was polled longest ago
    (never polled first). Two queries."""
    watched = PaymentIntent.objects.filter(chain=network, monitor_until__gt=now).order_by()
    rows = list(
        watched.filter(rescan_requested_at__isnull=False).values_list(*WATCHED_FIELDS, named=True)
    )
    if limit:
        swept = PollCursor.objects.filter(network=network, key=OuterRef("address"))
        oldest = (
            watched.filter(rescan_requested_at__isnull=True)
            .annotate(swept=Subquery(swept.values("updated_at")[:1]))
            .order_by(F("swept").asc(nulls_first=True), "pk")
        )
        rows += list(oldest.values_list(*WATCHED_FIELDS, named=True)[:limit])
    return rows


def tron_blocks_scan(network: str, adapter, state, *, now) -> Observed | dict:
    """One Tron block pass (the module's docstring); a dict report when the chain failed
    (its error is recorded)."""
    paid: dict = {}  # address -> watched row, for the addresses the blocks pay

    def watched(addresses: set[str]) -> list[str]:
        for row in watched_rows(network, now=now, addresses=addresses):
            paid[row.address] = row
        return list(paid)

    cursor = state.cursor if state else None
    try:
        scan = adapter.scan_block_range(
            watched,
            cursor=cursor,
            blocks=state.scanned_blocks if state else [],
            # Asked only when far behind: polling reads two lists per watched address.
            polling_cost=lambda: 2 * watched_count(network, now=now),
        )
        scan = checked_scan(adapter, [WatchTarget(address) for address in paid], scan)
    except ChainError as exc:
        logger.warning("%s block scan failed, polling every address: %s", network, exc)
        scan = None
    if scan is None or scan.fallback:
        return _poll_instead(network, adapter, state, scan, now=now)

    swept = sweep_rows(network, now=now, limit=settings.KERNODECK_TRON_SWEEP_ADDRESSES)
    polled, stored = None, {}
    if swept:
        keys = sorted({row.address for row in swept})
        stored = dict(
            PollCursor.objects.filter(network=network, key__in=keys).values_list("key", "position")
        )
        targets = [WatchTarget(address) for address in keys]
        try:
            polled = poll_cursors.scan_since(network, adapter, targets, swept, state, stored)
        except ChainError as exc:
            # The blocks were read: what they hold is stored; the sweep waits a pass.
            logger.warning("%s: the sweep of %d addresses failed: %s", network, len(keys), exc)
            polled = None

    observed = list(scan.transfers)
    if polled is not None:
        keys = {(t.txid, t.index) for t in observed}
        observed += [t for t in polled.transfers if (t.txid, t.index) not in keys]
    by_address = {**paid, **{row.address: row for row in swept}}
    others = {t.address for t in observed} - set(by_address)
    rows = [*by_address.values(), *watched_rows(network, now=now, addresses=others)]
    touched = transfers_store(network, observed, rows)
    seen_keys = {(t.txid, t.index) for t in observed}
    touched |= _transfers_left_blocks(network, scan, seen_keys)
    if polled is not None:
        touched |= transfers_mark_disappeared(
            network=network,
            addresses=polled.complete,
            seen_keys=seen_keys,
            # What the blocks just read hold is on the chain, whatever a list says.
            undecided=polled.undecided | scan.undecided | scan.txids,
        )
    touched |= _confirmations_refresh(network, tip=scan.tip, now=now)
    asked = [row.pk for row in swept if row.rescan_requested_at is not None]
    if polled is not None and asked:
        PaymentIntent.objects.filter(pk__in=asked).update(rescan_requested_at=None)

    def remember() -> None:
        if polled is None:
            return
        poll_cursors.cursors_save(network, stored, polled.cursors)
        # Polled now, moved or not: the sweep takes the others first next time.
        PollCursor.objects.filter(network=network, key__in=sorted(polled.complete)).update(
            updated_at=clock.now()
        )

    return Observed(
        touched=touched,
        health={"tip": scan.tip, "cursor": scan.cursor, "scanned_blocks": scan.blocks},
        report={
            "network": network,
            "mode": "blocks",
            "blocks": scan.read,
            "polled": len(swept) if polled is not None else 0,
            "transfers": len(observed),
        },
        remember=remember,
    )


def _poll_instead(network: str, adapter, state, scan, *, now) -> Observed | dict:
    """Every address polled (from its TronGrid cursor), as with KERNODECK_WATCH_BLOCK_SCAN
    off; the block cursor restarts where the fallback said, or stays where it was when the
    scan failed (the next pass reads those blocks again)."""
    if scan is not None:
        logger.info("%s: polling every address (%s)", network, scan.fallback)
    # Every open address, not in turns: only the polls cover the blocks the cursor skips.
    observed = addresses_poll(network, adapter, state, now=now, in_turns=False)
    if isinstance(observed, dict):
        return observed
    observed.health["cursor"] = scan.cursor if scan is not None else (state and state.cursor)
    observed.health["scanned_blocks"] = scan.blocks if scan is not None else None
    observed.report.update(
        mode="addresses", fallback=scan.fallback if scan is not None else "the scan failed"
    )
    return observed


def _transfers_left_blocks(network: str, scan, seen_keys: set) -> set:
    """A stored transfer that is not final, in a block the scan read again, whose
    transaction is in none of the blocks read, left the chain (a fork that lost): it stops
    counting. One whose transaction is still there but that the scan did not report (a
    token moved by another contract, found by a sweep) stays. Returns the intents' pks."""
    if scan.scanned_from is None:
        return set()
    candidates = (
        Transfer.objects.filter(
            network=network,
            disappeared_at__isnull=True,
            final=False,
            block_height__gte=scan.scanned_from,
            block_height__lte=scan.scanned_to,
        )
        .filter(Q(intent__isnull=True) | Q(intent__monitor_until__gt=clock.now()))
        .exclude(recorded_by__isnull=False)
        .exclude(kind=TransferKind.UNEXPLAINED)
        .only("pk", "txid", "index", "address", "reference", "disappeared_at", "intent_id")
    )
    touched = set()
    for transfer in candidates:
        if (transfer.txid, transfer.index) in seen_keys or transfer.txid.lower() in scan.txids:
            continue
        if transfer.txid in scan.undecided:
            continue
        _transfer_disappeared(transfer)
        if transfer.intent_id is not None:
            touched.add(transfer.intent_id)
    return touched
