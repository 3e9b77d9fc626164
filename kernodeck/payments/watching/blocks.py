"""The block scan (Bitcoin, Litecoin with KERNODECK_WATCH_BLOCK_SCAN): a pass that reads
the new blocks and mempool transactions instead of polling every watched address.

Its cost follows the blocks, not the intents; it falls back to polling every address when
it cannot follow. Apart from `scanning` because what it learns without being told (a
transfer that left the mempool, a block a reorg took away, confirmations following the
tip) needs its own queries; like the polling scan, it returns what it saw as `Observed`.
"""

import hashlib
import logging

from django.conf import settings
from django.db.models import F, Q, Value

from kernodeck.core import clock
from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
    WatchTarget,
    checked_scan,
    scan_checked,
)
from kernodeck.payments.models import MempoolMemory, PaymentIntent, Transfer
from kernodeck.payments.watching.scanning import (
    Observed,
    _health_record,
    _short,
    watch_targets,
    watched_addresses,
    watched_count,
    watched_rows,
)
from kernodeck.payments.watching.storing import (
    _transfer_disappeared,
    transfer_record,
    transfers_mark_disappeared,
    transfers_store,
)

logger = logging.getLogger(__name__)


def block_scanning(network: str, adapter) -> bool:
    """Whether this network's pass scans new blocks instead of polling each address (always
    on one's own node: it has no address index)."""
    if getattr(adapter, "scans_blocks_only", False):
        return True
    return settings.KERNODECK_WATCH_BLOCK_SCAN and hasattr(adapter, "scan_blocks")


SEEN_PREFIX = 8  # bytes of each txid kept in MempoolMemory.seen


def _mempool_source(adapter) -> str:
    return hashlib.sha256(adapter.base_url.encode()).hexdigest()[:16]


class SeenTxids:
    """The mempool transactions an earlier pass read, from MempoolMemory.seen: `txid in
    seen` compares the txid's first SEEN_PREFIX bytes."""

    def __init__(self, packed: bytes = b""):
        self.prefixes = {
            packed[at : at + SEEN_PREFIX] for at in range(0, len(packed), SEEN_PREFIX)
        }

    def __contains__(self, txid) -> bool:
        return isinstance(txid, str) and _prefix(txid) in self.prefixes

    def __len__(self) -> int:
        return len(self.prefixes)

    @staticmethod
    def pack(txids) -> bytes:
        return b"".join(sorted({_prefix(txid) for txid in txids}))


def _prefix(txid: str) -> bytes:
    return bytes.fromhex(txid[: SEEN_PREFIX * 2])


def mempool_memory(network: str, adapter) -> tuple[SeenTxids, object]:
    """What the last block scan of `network` through this API read of the mempool, and when
    that pass began (None when there is no such memory)."""
    memory = MempoolMemory.objects.filter(network=network, source=_mempool_source(adapter)).first()
    if memory is None:
        return SeenTxids(), None
    return SeenTxids(bytes(memory.seen)), memory.loaded_at


def blocks_scan(network: str, adapter, state, *, now) -> Observed | dict:
    """One block-scanning pass: the new blocks and the new mempool transactions, their
    output addresses looked up among the watched intents (one query per STORE_CHUNK
    addresses: the cost follows the blocks, not the intents); every address polled once
    instead when the scan cannot follow (first scan, a deep reorg, an API without the block
    endpoints) or when that is cheaper than reading what came (an outage's blocks, a flood
    of mempool transactions, more requests than the watched addresses). The mempool
    transactions already read are remembered in the database (MempoolMemory) once the
    pass applied what it saw, so a pass from cron reads only the new ones too; a dict
    report when the chain failed (its error is recorded)."""
    examined, since = mempool_memory(network, adapter)
    paid: dict = {}  # address -> watched row, for the addresses the scan found paid

    def watched(addresses: set[str]) -> list[str]:
        for row in watched_rows(network, now=now, addresses=addresses):
            paid[row.address] = row
        return list(paid)

    targets, newer = [], []
    try:
        scan = adapter.scan_blocks(
            watched,
            blocks=state.scanned_blocks if state else [],
            examined=examined,
            # Asked only past the scan's fixed limits (an outage, a flood): falling back
            # polls every watched address, so it is chosen only where that costs less.
            polling_cost=lambda: watched_count(network, now=now),
        )
        targets = [WatchTarget(address) for address in paid]
        scan = checked_scan(adapter, targets, scan)
    except ChainError as exc:
        logger.warning("%s block scan failed, polling every address: %s", network, exc)
        scan = None
    try:
        if scan is None or scan.fallback:
            if scan is not None:
                logger.info("%s: polling every address (%s)", network, scan.fallback)
            targets = [WatchTarget(address) for address in watched_addresses(network, now=now)]
            polled = scan_checked(adapter, targets)
        else:
            # A mempool transaction read by an earlier pass before an intent existed was
            # matched against the addresses of that pass only: poll the intents created
            # since (cost follows new intents, not open ones).
            if since is not None:
                newer = watched_rows(network, now=now, created_after=since)
            polled = scan_checked(adapter, watch_targets(network, newer)) if newer else None
    except ChainError as exc:
        logger.warning("%s watcher failed: %s", network, exc)
        _health_record(network, error=str(exc))
        return {"network": network, "error": _short(str(exc))}

    observed = list(polled.transfers) if polled is not None else []
    if scan is not None and not scan.fallback:
        keys = {(t.txid, t.index) for t in observed}
        observed += [t for t in scan.transfers if (t.txid, t.index) not in keys]
    rows = watched_rows(network, now=now, addresses={t.address for t in observed} - set(paid))
    touched = transfers_store(network, observed, [*paid.values(), *rows])
    seen_keys = {(t.txid, t.index) for t in observed}
    if scan is None or scan.fallback:
        touched |= transfers_mark_disappeared(
            network=network, addresses={t.address for t in targets}, seen_keys=seen_keys
        )
    else:
        touched |= _transfers_follow_chain(network, scan, seen_keys)
    tip = scan.tip if scan is not None else polled.tip
    touched |= _confirmations_refresh(network, tip=tip, now=now)
    # Every watched address was looked at (in the blocks and the mempool, or polled):
    # requests made before this pass began are answered.
    PaymentIntent.objects.filter(
        chain=network, rescan_requested_at__isnull=False, rescan_requested_at__lte=now
    ).update(rescan_requested_at=None)
    fallback = scan is None or bool(scan.fallback)
    return Observed(
        touched=touched,
        # A block scan that failed keeps its cursor: the next pass resumes from it (this one
        # polled every address, so nothing in between was missed).
        health={"tip": tip, "cursor": None, "scanned_blocks": scan.blocks if scan else None},
        report={
            "network": network,
            "mode": "addresses" if fallback else "blocks",
            "polled": len(targets) if fallback else len(newer),
            "transfers": len(observed),
        },
        remember=None if scan is None else lambda: _mempool_remember(network, adapter, scan, now),
    )


def _mempool_remember(network: str, adapter, scan, now) -> None:
    """The mempool transactions this scan read, so the next one (in this process or
    another: cron's `watch_chains --once`) does not read them again. Only those still in
    the mempool are kept, so the memory follows the mempool's size, not the chain's age."""
    fields = {
        "source": _mempool_source(adapter),
        "seen": SeenTxids.pack(scan.examined),
        "loaded_at": now,
    }
    # One statement on every pass but the first (this network's passes never overlap).
    if not MempoolMemory.objects.filter(network=network).update(**fields):
        MempoolMemory.objects.create(network=network, **fields)


def _transfers_follow_chain(network: str, scan, seen_keys: set) -> set:
    """What a block scan learns without being told: an unconfirmed transfer that left the
    mempool without entering a scanned block was replaced or dropped (disappeared); one in
    a block a reorg took away is unconfirmed again if it is back in the mempool, gone if not.
    Returns the pks of the intents concerned."""
    # Up to the last block read: a catch-up (Core reads 50 blocks a pass) judges the
    # transfers stored in the blocks after it on a later pass, once it read them.
    read_to = scan.blocks[-1][0] if scan.blocks else scan.tip
    candidates = (
        Transfer.objects.filter(network=network, disappeared_at__isnull=True, final=False)
        .filter(
            Q(block_height__isnull=True)
            | Q(block_height__gte=scan.rescanned_from, block_height__lte=read_to)
        )
        .filter(Q(intent__isnull=True) | Q(intent__monitor_until__gt=clock.now()))
        .exclude(recorded_by__isnull=False)
    )
    touched = set()
    for transfer in candidates:
        if (transfer.txid, transfer.index) in seen_keys:
            continue
        if transfer.block_height is None and transfer.txid in scan.mempool:
            continue  # still waiting in the mempool
        if transfer.intent_id is not None:
            touched.add(transfer.intent_id)
        if transfer.block_height is not None and transfer.txid in scan.mempool:
            transfer_record(
                ObservedTransfer(
                    network=network,
                    txid=transfer.txid,
                    index=transfer.index,
                    address=transfer.address,
                    asset=transfer.asset,
                    amount_base=int(transfer.amount_base),
                    confirmations=0,
                    token_contract=transfer.token_contract or None,
                    reference=transfer.reference or None,
                ),
                intent=None,  # it keeps the intent it has
            )
            continue
        _transfer_disappeared(transfer)
    return touched


def _confirmations_refresh(network: str, *, tip: int, now) -> set:
    """Confirmations of the stored transfers in blocks follow the tip (a block scan reports
    a transfer once, when its block is new): one UPDATE. Returns the pks of the intents
    whose transfers changed."""
    confirmations = Value(tip + 1) - F("block_height")
    changing = (
        Transfer.objects.filter(
            network=network,
            disappeared_at__isnull=True,
            block_height__isnull=False,
            block_height__lte=tip,
        )
        .filter(Q(intent__isnull=True) | Q(intent__monitor_until__gt=now))
        .exclude(recorded_by__isnull=False)
        .exclude(confirmations=confirmations)
    )
    touched = set(changing.exclude(intent__isnull=True).values_list("intent_id", flat=True))
    changing.update(confirmations=confirmations)
    return touched
