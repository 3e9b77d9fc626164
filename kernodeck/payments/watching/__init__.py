"""The chain watchers: store what the adapters saw, reconcile intents, keep chain health.

A pass is: (1) load what it needs in a few queries (the watched intents with their
methods, the stored transfers the scan reports, the counted transfers of every watched
intent), (2) ask the adapter (network I/O, no transaction open), (3) store every new or
changed transfer once (unique on network, txid, index) and classify it; transfers whose
only change is their confirmations are updated in bulk, (4) recompute every watched
intent's state in memory from all its transfers and the clock, and lock and write only
the intents whose outcome differs from the stored one (the locked write computes it
again from fresh rows). Each step is idempotent, so a pass killed half-way and run again
credits once; a pass over idle intents costs the same few statements however many there
are.

One module per step, every name callers use re-exported here (`watching.watch_all()`,
`watching.transfer_record(...)`):

- `scanning`: the watched intents and their targets, the address-polling scan, chain
  health (steps 1 to 3);
- `blocks`: the block scan (new blocks and mempool instead of polling every address);
- `tron_blocks`: Tron's block scan (the blocks since a cursor, a slow sweep of addresses);
- `cursors`: address polling from per-key cursors (PollCursor), asking only what can
  have changed;
- `rotation`: which intents an address-polling pass polls when a budget bounds it
  (those correctness needs on every pass, the others in turns);
- `storing`: transfers stored, classified, de-duplicated, marked disappeared;
- `reconciling`: one intent's outcome recomputed and applied, the allocator called.

The pass itself stays here: `watch_network` (a scan, then step 4, then the health), the
reconciliation of the intents a pass concerns, expiry, and the guarded runs of every
network. They call `payment_intent_reconcile` through this module, so replacing
`watching.payment_intent_reconcile` (as the tests of a crash between observing and
applying do) replaces it for every pass.
"""

import logging
import time

from django.conf import settings
from django.db.models import Q

from kernodeck.core import clock
from kernodeck.observability import recording
from kernodeck.payments.chains.adapters import adapter_for, configured_networks
from kernodeck.payments.chains.http import pass_deadline
from kernodeck.payments.models import ChainState, IntentStatus, PaymentIntent, Transfer
from kernodeck.payments.watching.blocks import block_scanning, blocks_scan
from kernodeck.payments.watching.reconciling import (
    _SEEN_FIELDS,
    _counted,
    _outcome,
    _outcome_changes,
    _seen_of,
    allocator,
    payment_intent_reconcile,
)
from kernodeck.payments.watching.scanning import (
    ADDRESS_CHUNK,
    WATCHED_FIELDS,
    _health_record,
    _short,
    addresses_poll,
    watch_targets,
    watched_addresses,
    watched_rows,
)
from kernodeck.payments.watching.storing import (
    COUNTED_KINDS,
    DUST_USD,
    STORE_CHUNK,
    TransferAlreadyRecorded,
    classify,
    intents_load,
    transfer_record,
    transfers_mark_disappeared,
    transfers_store,
    unexplained_balances_record,
)
from kernodeck.payments.watching.storing import _intent_for as _intent_for
from kernodeck.payments.watching.tron_blocks import tron_block_scanning, tron_blocks_scan

logger = logging.getLogger(__name__)

__all__ = [
    "ADDRESS_CHUNK",
    "COUNTED_KINDS",
    "DUST_USD",
    "STORE_CHUNK",
    "WATCHED_FIELDS",
    "TransferAlreadyRecorded",
    "allocator",
    "block_scanning",
    "classify",
    "intents_load",
    "intents_reconcile",
    "payment_intent_reconcile",
    "payment_intents_expire",
    "transfer_record",
    "transfers_mark_disappeared",
    "transfers_store",
    "tron_block_scanning",
    "unexplained_balances_record",
    "watch_all",
    "watch_network",
    "watch_network_guarded",
    "watch_network_isolated",
    "watch_targets",
    "watched_addresses",
    "watched_rows",
]


def watch_network(network: str) -> dict:
    """One pass over one network: observe, store, reconcile. Returns a small report."""
    adapter = adapter_for(network)
    if adapter is None:
        return {"network": network, "skipped": "no API URL configured"}
    now = clock.now()
    state = ChainState.objects.filter(network=network).first()
    if block_scanning(network, adapter):
        scan = blocks_scan
    elif tron_block_scanning(adapter):
        scan = tron_blocks_scan
    else:
        scan = addresses_poll
    observed = scan(network, adapter, state, now=now)
    if isinstance(observed, dict):
        return observed  # the chain failed: its error is recorded
    _reconcile_due(network, observed.touched, now=now)
    # Healthy (and the cursor moved on) only once everything seen was applied: a pass that
    # fails half-way leaves the cursor where it was, and the next one repeats it harmlessly.
    _health_record(network, **observed.health)
    if observed.remember is not None:
        observed.remember()
    return observed.report


def intents_reconcile(network: str, intents, *, now) -> int:
    """Recompute the outcome of `intents` in memory (their counted transfers read in one
    query per STORE_CHUNK) and apply it, under the intent's lock, only where it changes
    something: new transfers, more confirmations, or the clock (expiry). Returns how many
    were applied."""
    intents = list(intents)
    seen: dict = {}
    pks = [intent.pk for intent in intents]
    for start in range(0, len(pks), STORE_CHUNK):
        rows = _counted(Transfer.objects.filter(intent_id__in=pks[start : start + STORE_CHUNK]))
        for intent_id, *row in rows.values_list("intent_id", *_SEEN_FIELDS):
            seen.setdefault(intent_id, []).append(_seen_of(*row))
    applied = 0
    for intent in intents:
        if _outcome_changes(intent, _outcome(intent, seen.get(intent.pk, []), now=now)):
            payment_intent_reconcile(intent_id=intent.pk)
            applied += 1
    return applied


def _reconcile_due(network: str, touched: set, *, now) -> int:
    """Reconcile the watched intents a transfer of this pass concerns, and those whose
    outcome the clock may change (open ones past their expiry) or that wait for an
    allocation to be tried again (confirmed): the others cannot have changed."""
    clock_due = Q(monitor_until__gt=now) & (
        Q(status__in=(IntentStatus.PENDING, IntentStatus.DETECTED), expires_at__lte=now)
        | Q(status=IntentStatus.CONFIRMED)
    )
    intents = intents_load(network, touched, extra=clock_due)
    return intents_reconcile(
        network, [i for i in intents.values() if i.monitor_until > now], now=now
    )


def payment_intents_expire() -> int:
    """Reconcile pending instructions past their expiry: with nothing seen they expire.

    One instruction that cannot be reconciled (a bug, a stored value the code trips on) is
    logged with its traceback and left for the next run; the others still expire."""
    due = PaymentIntent.objects.filter(
        status=IntentStatus.PENDING, expires_at__lte=clock.now()
    ).values_list("pk", flat=True)
    expired = 0
    for intent_id in list(due):
        try:
            intent = payment_intent_reconcile(intent_id=intent_id)
        except Exception:
            logger.exception("expiry of payment %s failed", intent_id)
            continue
        expired += intent.status == IntentStatus.EXPIRED
    return expired


def watch_network_isolated(network: str) -> dict:
    """watch_network_guarded within the pass's deadline (KERNODECK_WATCH_PASS_DEADLINE: the
    chain API's requests of this pass, all together, end by then; a pass past it fails as
    this network's error), timed and counted for /metrics."""
    started = time.monotonic()
    with pass_deadline(settings.KERNODECK_WATCH_PASS_DEADLINE):
        report = watch_network_guarded(network)
    if "skipped" not in report:
        recording.watcher_pass_observe(
            network=network, seconds=time.monotonic() - started, failed="error" in report
        )
    return report


def watch_network_guarded(network: str) -> dict:
    """watch_network, and whatever goes wrong stays in this network.

    A ChainError is already recorded by watch_network. Anything else is not the API's
    nonsense but something our code did not expect (a bug, a database refusal): it is
    logged with its traceback and recorded as this network's last error, so operators see
    it, and the network turns unhealthy if it keeps happening (no success is recorded)."""
    try:
        return watch_network(network)
    except Exception as exc:
        logger.exception("%s watcher failed unexpectedly", network)
        message = f"internal error: {type(exc).__name__}: {exc}"
        try:
            _health_record(network, error=message)
        except Exception:
            logger.exception("%s watcher: could not record its error", network)
        return {"network": network, "error": _short(message)}


def watch_all() -> list[dict]:
    """One pass of every configured watcher, one after another, then expiry of what nothing
    paid. A network that fails, however it fails, stops neither the next networks nor the
    expiry, and one that is slow holds them at most its pass deadline. The workers' tasks
    and the `watch_chains` command run each network on its own instead (tasks.py)."""
    reports = [watch_network_isolated(network) for network in configured_networks()]
    try:
        payment_intents_expire()
    except Exception:
        logger.exception("expiry of payment instructions failed")
    return reports
