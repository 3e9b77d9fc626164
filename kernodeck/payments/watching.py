"""The chain watchers' writes: store what adapters saw, reconcile intents, keep health.

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
"""

import functools
import hashlib
import logging
import time
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F, Q, Value
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import ServiceError
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.observability import recording
from kernodeck.payments import locks, reconciliation
from kernodeck.payments.chains.adapters import adapter_for, configured_networks
from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
    WatchTarget,
    checked_scan,
    scan_checked,
)
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    Transfer,
    TransferKind,
)

logger = logging.getLogger(__name__)

DUST_USD = Decimal("0.50")
COUNTED_KINDS = (TransferKind.MATCHED, TransferKind.LATE)
STORE_CHUNK = 500  # keys per IN (...) list: below SQLite's variable limit
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


def watch_targets(network: str, intents) -> list[WatchTarget]:
    if network == "solana":
        targets = [WatchTarget(i.address, reference=i.solana_reference) for i in intents]
        recipients = {i.address for i in intents}
        # Also the bare recipient, for wallets that drop the reference key.
        return targets + [WatchTarget(address) for address in sorted(recipients)]
    return [WatchTarget(i.address) for i in intents]


# -- storing and classifying transfers -----------------------------------------------


def _intent_for(
    observed: ObservedTransfer, by_address: dict, solana_intents
) -> PaymentIntent | None:
    if observed.network != "solana":
        return by_address.get(observed.address)
    if observed.reference:
        return next((i for i in solana_intents if i.solana_reference == observed.reference), None)
    # No reference: the exact amount (made unique at creation) may still tell the intent.
    candidates = [i for i in solana_intents if int(i.amount_base) == observed.amount_base]
    return candidates[0] if len(candidates) == 1 else None


def classify(observed, intent: PaymentIntent | None, *, seen_at) -> str:
    if observed.failed:
        return TransferKind.FAILED
    if observed.asset == "TOKEN":
        return TransferKind.SPOOFED
    if intent is None:
        return TransferKind.UNALLOCATED
    if observed.asset != intent.method.asset:
        return TransferKind.WRONG_ASSET
    usd = Decimal(observed.amount_base).scaleb(-intent.method.decimals) * intent.rate_usd_per_coin
    if usd < DUST_USD and observed.amount_base < intent.amount_units:
        return TransferKind.DUST
    return TransferKind.LATE if seen_at > intent.expires_at else TransferKind.MATCHED


def _closed(intent: PaymentIntent | None) -> bool:
    """Allocated, decided by an operator, or closed with its order (read fresh: the
    watcher's copy may be old)."""
    if intent is None:
        return False
    return _closed_state(
        *PaymentIntent.objects.values_list("status", "resolution", "closed_at").get(pk=intent.pk)
    )


def _closed_state(status, resolution, closed_at) -> bool:
    return status == IntentStatus.ALLOCATED or bool(resolution) or closed_at is not None


def transfer_record(observed: ObservedTransfer, *, intent, recorded_by=None) -> Transfer:
    """Store one observed transfer, or update the stored one. Never counts it twice."""
    now = clock.now()
    fields = {
        "address": observed.address,
        "asset": observed.asset,
        "token_contract": observed.token_contract or "",
        "amount_base": observed.amount_base,
        "confirmations": observed.confirmations,
        "block_height": observed.block_height,
        "block_time": observed.block_time,
        "failed": observed.failed,
        "final": observed.final,
        "reference": observed.reference or "",
    }
    key = {"network": observed.network, "txid": observed.txid, "index": observed.index}
    with transaction.atomic():
        transfer = Transfer.objects.select_for_update().filter(**key).first()
        if transfer is None:
            try:
                with transaction.atomic():
                    transfer = Transfer(
                        **key,
                        **fields,
                        first_seen_at=now,
                        last_seen_at=now,
                        intent=intent,
                        recorded_by=recorded_by,
                        kind=TransferKind.UNALLOCATED,
                    )
                    transfer.kind = classify(observed, intent, seen_at=transfer.seen_at)
                    if transfer.kind in COUNTED_KINDS and _closed(intent):
                        # Money arriving after the payment was settled or decided: never
                        # counted automatically, always shown to an operator.
                        transfer.kind = TransferKind.UNALLOCATED
                    transfer.save(force_insert=True)
                    audit_record(
                        action="payment.transfer_seen",
                        target=transfer,
                        actor=recorded_by,
                        after={
                            **key,
                            "amount_base": str(observed.amount_base),
                            "kind": transfer.kind,
                            "intent": str(intent.pk) if intent else None,
                        },
                    )
                    return transfer
            except IntegrityError:
                # Another pass stored it first; fall through and update that row.
                transfer = Transfer.objects.select_for_update().get(**key)
        for name, value in fields.items():
            setattr(transfer, name, value)
        transfer.last_seen_at = now
        transfer.disappeared_at = None
        if transfer.intent_id is None and intent is not None:
            transfer.intent = intent
        if not _closed(transfer.intent):
            # A closed payment's transfers keep the kind they had when it closed.
            transfer.kind = classify(observed, transfer.intent, seen_at=transfer.seen_at)
        transfer.save()
    return transfer


def _unchanged_but_confirmations(
    transfer: Transfer, observed: ObservedTransfer, intents: dict, match
) -> bool:
    """True when `observed` differs from the stored `transfer` at most in its
    confirmations and finality, so a bulk update is all it needs (no kind to recompute,
    no intent to attach, nothing reappearing). `match(observed)` is the intent it pays."""
    if transfer.disappeared_at is not None:
        return False
    if (
        transfer.address != observed.address
        or transfer.asset != observed.asset
        or transfer.token_contract != (observed.token_contract or "")
        or int(transfer.amount_base) != observed.amount_base
        or transfer.block_height != observed.block_height
        or transfer.block_time != observed.block_time
        or transfer.failed != observed.failed
        or transfer.reference != (observed.reference or "")
    ):
        return False
    intent = intents.get(transfer.intent_id) if transfer.intent_id else None
    if transfer.intent_id and intent is None:
        return False  # an intent this pass did not load: let the full path judge
    if transfer.intent_id is None and match(observed) is not None:
        return False  # an intent to attach
    # Closing is for good, so the copy this pass loaded can be trusted when it says closed
    # (a stale open copy only sends the transfer down the full path, which reads it fresh).
    if intent is not None and _closed_state(intent.status, intent.resolution, intent.closed_at):
        return True  # a closed payment's transfers keep their kind
    return transfer.kind == classify(observed, intent, seen_at=transfer.seen_at)


def transfers_store(network: str, observed: list[ObservedTransfer], watched: list) -> set:
    """Store what a scan saw: new and changed transfers one by one through
    transfer_record (lock, classify, audit), and those whose only change is their
    confirmations (every block raises them all) in one UPDATE per confirmation count.
    The stored rows, and the intents they concern, are read in one query per STORE_CHUNK.
    `watched` are the watched intents (rows or intents). Returns the pks of the intents
    the observed transfers belong to."""
    by_address = {i.address: i for i in watched if network != "solana"}
    solana_rows = [i for i in watched if network == "solana"]
    stored = {}
    txids = sorted({o.txid for o in observed})
    for start in range(0, len(txids), STORE_CHUNK):
        for transfer in Transfer.objects.filter(
            network=network, txid__in=txids[start : start + STORE_CHUNK]
        ).only(*_STORE_FIELDS):
            stored[(transfer.txid, transfer.index)] = transfer
    matched = {}
    for item in observed:
        row = _intent_for(item, by_address, solana_rows)
        matched[(item.txid, item.index)] = row.pk if row is not None else None
    touched = {pk for pk in matched.values() if pk is not None}
    touched |= {t.intent_id for t in stored.values() if t.intent_id is not None}
    intents = intents_load(network, touched)

    def match(item):
        return intents.get(matched[(item.txid, item.index)])

    bulk: dict[tuple[int, bool], list[int]] = {}
    for item in observed:
        transfer = stored.get((item.txid, item.index))
        if transfer is not None and _unchanged_but_confirmations(transfer, item, intents, match):
            bulk.setdefault((item.confirmations, item.final), []).append(transfer.pk)
            continue
        transfer_record(item, intent=match(item))
    now = clock.now()
    for (confirmations, final), pks in bulk.items():
        for start in range(0, len(pks), STORE_CHUNK):
            Transfer.objects.filter(pk__in=pks[start : start + STORE_CHUNK]).update(
                confirmations=confirmations, final=final, last_seen_at=now
            )
    return touched


def intents_load(network: str, pks, *, extra: Q | None = None) -> dict:
    """The intents of `network` among `pks` (and those matching `extra`), with their
    methods, by pk: one query per STORE_CHUNK pks."""
    base = PaymentIntent.objects.filter(chain=network).select_related("method")
    found = {}
    if extra is not None:
        found = {intent.pk: intent for intent in base.filter(extra)}
    rest = sorted(pk for pk in pks if pk not in found)
    for start in range(0, len(rest), STORE_CHUNK):
        found.update(
            (intent.pk, intent) for intent in base.filter(pk__in=rest[start : start + STORE_CHUNK])
        )
    return found


_STORE_FIELDS = (
    "pk",
    "network",
    "txid",
    "index",
    "address",
    "asset",
    "token_contract",
    "amount_base",
    "confirmations",
    "block_height",
    "block_time",
    "first_seen_at",
    "disappeared_at",
    "failed",
    "final",
    "reference",
    "intent_id",
    "kind",
)


def _transfer_disappeared(transfer: Transfer) -> None:
    """The chain no longer shows this transfer: it stops counting (audited)."""
    transfer.disappeared_at = clock.now()
    transfer.save(update_fields=["disappeared_at"])
    audit_record(action="payment.transfer_disappeared", target=transfer)


def transfers_mark_disappeared(*, network: str, addresses: set[str], seen_keys: set) -> set:
    """Unconfirmed transfers no longer reported at a scanned address were replaced or
    reorganised away: they stop counting (and count again if they come back). Returns the
    pks of the intents they belonged to."""
    touched = set()
    # Only transfers at watched addresses can be among them: those of watched intents, and
    # those no intent claimed (read in one query however many addresses were scanned).
    candidates = (
        Transfer.objects.filter(network=network, disappeared_at__isnull=True, final=False)
        .filter(Q(intent__isnull=True) | Q(intent__monitor_until__gt=clock.now()))
        .exclude(recorded_by__isnull=False)
        .only("pk", "txid", "index", "address", "disappeared_at", "intent_id")
    )
    for transfer in candidates:
        if transfer.address not in addresses or (transfer.txid, transfer.index) in seen_keys:
            continue
        _transfer_disappeared(transfer)
        if transfer.intent_id is not None:
            touched.add(transfer.intent_id)
    return touched


# -- reconciliation -------------------------------------------------------------------


def _due(intent: PaymentIntent) -> reconciliation.Due:
    return reconciliation.Due(
        amount_base=intent.amount_units,
        amount_usd=intent.amount_usd,
        usd_per_coin=intent.rate_usd_per_coin,
        decimals=intent.method.decimals,
        expires_at=intent.expires_at,
    )


_SEEN_FIELDS = ("amount_base", "confirmations", "block_time", "first_seen_at", "final")


def _counted(transfers):
    return transfers.filter(kind__in=COUNTED_KINDS, disappeared_at__isnull=True)


def _seen_of(amount_base, confirmations, block_time, first_seen_at, final) -> reconciliation.Seen:
    # Transfer.seen_at: the block time or the first sighting, whichever is earlier.
    seen_at = first_seen_at if block_time is None else min(block_time, first_seen_at)
    return reconciliation.Seen(
        amount_base=int(amount_base), confirmations=confirmations, seen_at=seen_at, final=final
    )


def _seen(intent: PaymentIntent) -> list[reconciliation.Seen]:
    return [_seen_of(*row) for row in _counted(intent.transfers.all()).values_list(*_SEEN_FIELDS)]


def _outcome(intent: PaymentIntent, seen, *, now) -> reconciliation.Outcome:
    policy = reconciliation.Policy(confirmations=intent.method.confirmations)
    return reconciliation.reconcile(_due(intent), seen, now=now, policy=policy)


def _outcome_changes(intent: PaymentIntent, outcome: reconciliation.Outcome) -> bool:
    """Whether applying `outcome` would change the stored intent. A confirmed outcome
    always counts: its allocation may have failed before and is tried again."""
    if intent.status == IntentStatus.ALLOCATED or intent.resolution:
        return False
    if outcome.settles:
        return True
    stored = (
        intent.status,
        int(intent.received_base),
        int(intent.confirmed_base),
        intent.review_reason,
    )
    return stored != (
        outcome.status,
        outcome.received_base,
        outcome.confirmed_base,
        outcome.reason,
    )


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


@retry_lost_races
def payment_intent_reconcile(*, intent_id) -> PaymentIntent:
    """Recompute one intent's status from its transfers and apply it; settle on confirmed."""
    with transaction.atomic():
        intent = locks.lock_intent(intent_id)
        if intent.status == IntentStatus.ALLOCATED or intent.resolution:
            return intent
        outcome = _outcome(intent, _seen(intent), now=clock.now())
        before = {"status": intent.status, "received_base": str(intent.received_base)}
        intent.status = outcome.status
        intent.received_base = outcome.received_base
        intent.confirmed_base = outcome.confirmed_base
        intent.review_reason = outcome.reason
        intent.reconciled_at = clock.now()
        if outcome.settles:
            _allocate(intent)
        after = {"status": intent.status, "received_base": str(intent.received_base)}
        intent.save(
            update_fields=[
                "status",
                "received_base",
                "confirmed_base",
                "review_reason",
                "reconciled_at",
            ]
        )
        if before != after:
            audit_record(
                action="payment.reconciled",
                target=intent,
                before=before,
                after={**after, "reason": intent.review_reason},
            )
    return intent


@functools.cache
def allocator():
    """What gives confirmed money to what it paid for: the function named by
    KERNODECK_PAYMENT_ALLOCATOR (the settlement step; payments know nothing of purposes)."""
    return import_string(settings.KERNODECK_PAYMENT_ALLOCATOR)


def _allocate(intent: PaymentIntent) -> None:
    """Confirmed: give the money to what it paid for. On failure it waits for review."""
    if intent.closed_at is not None:
        # The order was settled otherwise or cancelled: this money is extra, never absorbed.
        intent.review_reason = _(
            "Confirmed after its instructions were closed (%(why)s): not allocated."
        ) % {"why": intent.get_closed_reason_display().lower()}
        return
    try:
        with transaction.atomic():
            allocator()(intent)
    except ServiceError as exc:
        intent.review_reason = _("Confirmed but not allocated: %(why)s") % {"why": exc.message}
        return
    intent.status = IntentStatus.ALLOCATED


# -- a whole pass -----------------------------------------------------------------------


def _health_record(
    network: str,
    *,
    tip=None,
    cursor=None,
    late_polled_at=None,
    scanned_blocks=None,
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


def watch_network(network: str) -> dict:
    """One pass over one network: observe, store, reconcile. Returns a small report."""
    adapter = adapter_for(network)
    if adapter is None:
        return {"network": network, "skipped": "no API URL configured"}
    now = clock.now()
    state = ChainState.objects.filter(network=network).first()
    if block_scanning(network, adapter):
        return _watch_blocks(network, adapter, state, now=now)
    intents = watched_rows(network, now=now)
    late_due = _late_poll_due(state, now)
    polled = [i for i in intents if late_due or _polled_every_pass(i, now)]
    # Even with nothing to watch, the scan reads the chain's tip: that is the health check.
    targets = watch_targets(network, polled)
    try:
        # Network I/O, no lock held; every value is checked before anything is stored.
        result = scan_checked(adapter, targets, cursor=state.cursor if state else None)
    except ChainError as exc:
        logger.warning("%s watcher failed: %s", network, exc)
        _health_record(network, error=str(exc))
        return {"network": network, "error": _short(str(exc))}

    touched = transfers_store(network, result.transfers, intents)
    if network != "ethereum":
        # Esplora, TronGrid and Solana report an address's whole recent history each time;
        # Ethereum scans block windows, so absence there proves nothing.
        seen_keys = {(t.txid, t.index) for t in result.transfers}
        touched |= transfers_mark_disappeared(
            network=network, addresses={t.address for t in targets}, seen_keys=seen_keys
        )
    rescanned = [i.pk for i in polled if i.rescan_requested_at is not None]
    if rescanned:
        PaymentIntent.objects.filter(pk__in=rescanned).update(rescan_requested_at=None)
    _reconcile_due(network, touched, now=now)
    # Healthy (and the cursor moved on) only once everything seen was applied: a pass that
    # fails half-way leaves the cursor where it was, and the next one repeats it harmlessly.
    _health_record(
        network, tip=result.tip, cursor=result.cursor, late_polled_at=now if late_due else None
    )
    return {
        "network": network,
        "watched": len(intents),
        "polled": len(polled),
        "transfers": len(result.transfers),
    }


# -- block scanning (Bitcoin, Litecoin) ----------------------------------------------------


def block_scanning(network: str, adapter) -> bool:
    """Whether this network's pass scans new blocks instead of polling each address."""
    return settings.KERNODECK_WATCH_BLOCK_SCAN and hasattr(adapter, "scan_blocks")


def _mempool_memory_key(network: str, adapter) -> str:
    digest = hashlib.sha256(adapter.base_url.encode()).hexdigest()[:16]
    return f"kernodeck:watcher:mempool:{network}:{digest}"


def _watch_blocks(network: str, adapter, state, *, now) -> dict:
    """One block-scanning pass: the new blocks and the new mempool transactions, their
    output addresses looked up among the watched intents (one query per STORE_CHUNK
    addresses: the cost follows the blocks, not the intents); every address polled once
    instead when the scan cannot follow (first scan, a deep reorg, a long outage, a flood
    of mempool transactions, an API without the block endpoints). The mempool
    transactions already read are remembered in the cache (losing them only costs
    reading them again)."""
    memory_key = _mempool_memory_key(network, adapter)
    memory = cache.get(memory_key) or {}
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
            examined=memory.get("examined", frozenset()),
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
            since = memory.get("loaded_at")
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
    _reconcile_due(network, touched, now=now)
    # A block scan that failed keeps its cursor: the next pass resumes from it (this one
    # polled every address, so nothing in between was missed).
    _health_record(network, tip=tip, cursor=None, scanned_blocks=scan.blocks if scan else None)
    if scan is not None:
        cache.set(memory_key, {"examined": scan.examined, "loaded_at": now}, 3600)
    fallback = scan is None or bool(scan.fallback)
    return {
        "network": network,
        "mode": "addresses" if fallback else "blocks",
        "polled": len(targets) if fallback else len(newer),
        "transfers": len(observed),
    }


def _transfers_follow_chain(network: str, scan, seen_keys: set) -> set:
    """What a block scan learns without being told: an unconfirmed transfer that left the
    mempool without entering a scanned block was replaced or dropped (disappeared); one in
    a block a reorg took away is unconfirmed again if it is back in the mempool, gone if not.
    Returns the pks of the intents concerned."""
    candidates = (
        Transfer.objects.filter(network=network, disappeared_at__isnull=True, final=False)
        .filter(Q(block_height__isnull=True) | Q(block_height__gte=scan.rescanned_from))
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
    """watch_network_guarded, timed and counted for /metrics."""
    started = time.monotonic()
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
    """One pass of every configured watcher, then expiry of what nothing paid. A network
    that fails, however it fails, stops neither the next networks nor the expiry."""
    reports = [watch_network_isolated(network) for network in configured_networks()]
    try:
        payment_intents_expire()
    except Exception:
        logger.exception("expiry of payment instructions failed")
    return reports


def _short(text: str) -> str:
    """An error for a one-line report: one line, bounded."""
    return " ".join(text.split())[:300]
