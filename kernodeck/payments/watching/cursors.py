"""Address polling that asks only what can have changed: the per-key cursors (PollCursor)
of the adapters that offer `scan_since` (Tron, Solana, Esplora).

A pass loads the network's cursors in one query, gives the adapter those it may use, and
saves the positions the adapter answers once the pass applied what it saw (the pass's
`remember` step), so a pass that fails half-way leaves every cursor where it was. A cursor
never covers what can still change: the adapters keep it before what is not solidified or
finalized, and here an Esplora address with a transfer still unconfirmed or within the
adapter's reorg depth, or one a customer asked to look at again, is read in full.
"""

from django.db.models import F, Q, Value

from kernodeck.core import clock
from kernodeck.payments.chains.base import PollScan, checked_scan
from kernodeck.payments.models import PollCursor, Transfer

SAVE_CHUNK = 500  # cursors per INSERT ... ON CONFLICT


def polls_since(adapter) -> bool:
    """Whether this adapter polls from per-key cursors."""
    return hasattr(adapter, "scan_since")


def cursors_load(network: str) -> dict[str, str]:
    """Every stored cursor of `network`, key -> position (one query)."""
    return dict(PollCursor.objects.filter(network=network).values_list("key", "position"))


def _rechecked(network: str, adapter, state) -> set[str]:
    """Addresses with a transfer a chain could still change (Esplora: unconfirmed, or in
    the last `reorg_depth` blocks below the tip last seen): no cursor for them."""
    depth = getattr(adapter, "reorg_depth", 0)
    if not depth:
        return set()
    recent = Q(block_height__isnull=True)
    if state is not None and state.tip:
        recent |= Q(block_height__gt=state.tip - depth)
    return set(
        Transfer.objects.filter(network=network, disappeared_at__isnull=True)
        .filter(recent)
        .values_list("address", flat=True)
    )


def scan_since(network: str, adapter, targets, polled, state, stored: dict) -> PollScan:
    """The adapter's `scan_since` of `targets` from the `stored` cursors it may use,
    checked like every scan. `polled`: the watched rows of the targets (a rescan request
    drops its address's cursor)."""
    dropped = _rechecked(network, adapter, state) if stored else set()
    dropped |= {row.address for row in polled if row.rescan_requested_at is not None}
    usable = {target.address for target in targets if target.address in stored} - dropped
    cursors = {key: stored[key] for key in sorted(usable)}
    result = checked_scan(adapter, targets, adapter.scan_since(targets, cursors=cursors))
    if not isinstance(result, PollScan):
        raise TypeError(f"{network}: scan_since returned no PollScan")
    return result


def cursors_save(
    network: str,
    stored: dict,
    positions: dict,
    *,
    prune: set | None = None,
    complete: frozenset = frozenset(),
):
    """Store the positions that moved (one statement per SAVE_CHUNK); with `prune` (the
    keys still watched), forget the cursors of the other keys.

    A key read whole this pass (`complete`) that got no position loses its stored one: a
    cursor is only good for the state it was read at. An Esplora address whose payment left
    the mempool is read whole with an empty history (no counters, so no position); keeping
    the cursor of when it held that payment would skip its history once a new payment of
    the same amount brought its counters back to that cursor's, and the payment would be
    seen only once mined (seen late, perhaps after the expiry)."""
    now = clock.now()
    changed = [
        PollCursor(network=network, key=key, position=position, updated_at=now)
        for key, position in sorted(positions.items())
        if stored.get(key) != position
    ]
    for start in range(0, len(changed), SAVE_CHUNK):
        PollCursor.objects.bulk_create(
            changed[start : start + SAVE_CHUNK],
            update_conflicts=True,
            unique_fields=["network", "key"],
            update_fields=["position", "updated_at"],
        )
    stale = sorted((stored.keys() & complete) - positions.keys())
    for start in range(0, len(stale), SAVE_CHUNK):
        PollCursor.objects.filter(
            network=network, key__in=stale[start : start + SAVE_CHUNK]
        ).delete()
    if prune is not None:
        gone = sorted(stored.keys() - prune - positions.keys() - set(stale))
        for start in range(0, len(gone), SAVE_CHUNK):
            PollCursor.objects.filter(
                network=network, key__in=gone[start : start + SAVE_CHUNK]
            ).delete()


def confirmations_follow_tip(network: str, skipped: set, *, tip: int, now) -> set:
    """Confirmations of the stored transfers at addresses whose history a pass skipped
    follow the tip (Esplora's own count: tip - height + 1): one UPDATE for the network's
    watched transfers in blocks. Returns the pks of the intents whose transfers changed."""
    if not skipped:
        return set()
    confirmations = Value(tip + 1) - F("block_height")
    changing = (
        Transfer.objects.filter(
            network=network,
            disappeared_at__isnull=True,
            block_height__isnull=False,
            block_height__lte=tip,
            intent__monitor_until__gt=now,
        )
        .exclude(recorded_by__isnull=False)
        .exclude(confirmations=confirmations)
    )
    changing = [
        (pk, intent_id, address)
        for pk, intent_id, address in changing.values_list("pk", "intent_id", "address")
        if address in skipped
    ]
    if not changing:
        return set()
    pks = [pk for pk, _intent, _address in changing]
    for start in range(0, len(pks), SAVE_CHUNK):
        Transfer.objects.filter(pk__in=pks[start : start + SAVE_CHUNK]).update(
            confirmations=confirmations
        )
    return {intent_id for _pk, intent_id, _address in changing}
