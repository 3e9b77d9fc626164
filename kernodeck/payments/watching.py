"""The chain watchers' writes: store what adapters saw, reconcile intents, keep health.

A pass is: (1) ask the adapter (network I/O, no transaction open), (2) store every
transfer once (unique on network, txid, index) and classify it, (3) recompute the state
of every intent concerned from all its transfers and apply it under the intent's row
lock. Each step is idempotent, so a pass killed half-way and run again credits once.
"""

import logging
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import ServiceError
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.orders import services as order_services
from kernodeck.payments import locks, reconciliation
from kernodeck.payments.chains.adapters import adapter_for, configured_networks
from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
    WatchTarget,
    scan_checked,
)
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    Purpose,
    Transfer,
    TransferKind,
)

logger = logging.getLogger(__name__)

DUST_USD = Decimal("0.50")
COUNTED_KINDS = (TransferKind.MATCHED, TransferKind.LATE)


# -- which intents a network must watch ---------------------------------------------


def watched_intents(network: str):
    """Intents whose address is still watched: open ones and those inside monitoring."""
    return PaymentIntent.objects.filter(
        chain=network, monitor_until__gt=clock.now()
    ).select_related("method")


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
    candidates = [i for i in solana_intents if i.amount_units == observed.amount_base]
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
    status, resolution, closed_at = PaymentIntent.objects.values_list(
        "status", "resolution", "closed_at"
    ).get(pk=intent.pk)
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


def transfers_mark_disappeared(*, network: str, addresses: set[str], seen_keys: set) -> int:
    """Unconfirmed transfers no longer reported at a scanned address were replaced or
    reorganised away: they stop counting (and count again if they come back)."""
    gone = 0
    candidates = Transfer.objects.filter(
        network=network, address__in=addresses, disappeared_at__isnull=True, final=False
    ).exclude(recorded_by__isnull=False)
    for transfer in candidates:
        if (transfer.txid, transfer.index) in seen_keys:
            continue
        transfer.disappeared_at = clock.now()
        transfer.save(update_fields=["disappeared_at"])
        audit_record(action="payment.transfer_disappeared", target=transfer)
        gone += 1
    return gone


# -- reconciliation -------------------------------------------------------------------


def _due(intent: PaymentIntent) -> reconciliation.Due:
    return reconciliation.Due(
        amount_base=intent.amount_units,
        amount_usd=intent.amount_usd,
        usd_per_coin=intent.rate_usd_per_coin,
        decimals=intent.method.decimals,
        expires_at=intent.expires_at,
    )


def _seen(intent: PaymentIntent) -> list[reconciliation.Seen]:
    transfers = intent.transfers.filter(kind__in=COUNTED_KINDS, disappeared_at__isnull=True)
    return [
        reconciliation.Seen(
            amount_base=int(t.amount_base),
            confirmations=t.confirmations,
            seen_at=t.seen_at,
            final=t.final,
        )
        for t in transfers
    ]


@retry_lost_races
def payment_intent_reconcile(*, intent_id) -> PaymentIntent:
    """Recompute one intent's status from its transfers and apply it; settle on confirmed."""
    with transaction.atomic():
        intent = locks.lock_intent(intent_id)
        if intent.status == IntentStatus.ALLOCATED or intent.resolution:
            return intent
        policy = reconciliation.Policy(confirmations=intent.method.confirmations)
        outcome = reconciliation.reconcile(
            _due(intent), _seen(intent), now=clock.now(), policy=policy
        )
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
            if intent.purpose == Purpose.ORDER:
                order_services.order_settle(order=intent.order, cause={"payment": str(intent.pk)})
            elif intent.purpose == Purpose.EXTENSION:
                from kernodeck.support import services as support_services

                support_services.extension_settle(
                    extension_id=intent.extension_id,
                    intent_id=intent.pk,
                    cause={"payment": str(intent.pk)},
                )
            else:
                from kernodeck.ledger import services as ledger_services

                ledger_services.topup_credit_confirmed(intent=intent)
    except ServiceError as exc:
        intent.review_reason = _("Confirmed but not allocated: %(why)s") % {"why": exc.message}
        return
    intent.status = IntentStatus.ALLOCATED


# -- a whole pass -----------------------------------------------------------------------


def _health_record(network: str, *, tip=None, cursor=None, error: str = "") -> None:
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
        state.save()


def watch_network(network: str) -> dict:
    """One pass over one network: observe, store, reconcile. Returns a small report."""
    adapter = adapter_for(network)
    if adapter is None:
        return {"network": network, "skipped": "no API URL configured"}
    intents = list(watched_intents(network))
    # Even with nothing to watch, the scan reads the chain's tip: that is the health check.
    targets = watch_targets(network, intents)
    try:
        # Network I/O, no lock held; every value is checked before anything is stored.
        result = scan_checked(adapter, targets, cursor=_cursor(network))
    except ChainError as exc:
        logger.warning("%s watcher failed: %s", network, exc)
        _health_record(network, error=str(exc))
        return {"network": network, "error": _short(str(exc))}

    by_address = {i.address: i for i in intents if network != "solana"}
    solana_intents = [i for i in intents if network == "solana"]
    touched = set()
    for observed in result.transfers:
        intent = _intent_for(observed, by_address, solana_intents)
        transfer = transfer_record(observed, intent=intent)
        if transfer.intent_id:
            touched.add(transfer.intent_id)
    if network != "ethereum":
        # Esplora, TronGrid and Solana report an address's whole recent history each time;
        # Ethereum scans block windows, so absence there proves nothing.
        seen_keys = {(t.txid, t.index) for t in result.transfers}
        transfers_mark_disappeared(
            network=network, addresses={t.address for t in targets}, seen_keys=seen_keys
        )
        touched |= {i.pk for i in intents}
    PaymentIntent.objects.filter(pk__in=[i.pk for i in intents]).update(rescan_requested_at=None)
    for intent_id in touched | {
        i.pk for i in intents if i.status in (IntentStatus.PENDING, IntentStatus.DETECTED)
    }:
        payment_intent_reconcile(intent_id=intent_id)
    # Healthy (and the cursor moved on) only once everything seen was applied: a pass that
    # fails half-way leaves the cursor where it was, and the next one repeats it harmlessly.
    _health_record(network, tip=result.tip, cursor=result.cursor)
    return {"network": network, "watched": len(intents), "transfers": len(result.transfers)}


def _cursor(network: str):
    state = ChainState.objects.filter(network=network).first()
    return state.cursor if state else None


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
