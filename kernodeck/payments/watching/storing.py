"""Storing what the chain adapters saw: one row per (network, txid, index), classified.

A new or changed transfer goes through `transfer_record` (lock, classify, audit); one whose
only change is its confirmations is updated in bulk by `transfers_store`; one the chain no
longer shows stops counting (`transfers_mark_disappeared`). Apart from the scans, which
ask the chain, and from the reconciliation, which counts what is stored here: storing
never counts a transfer twice (a unique (network, txid, index) and a lock per row).
"""

import logging
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Q, Sum
from django.utils.translation import gettext as _

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.core.services import audit_record
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import IntentStatus, PaymentIntent, Transfer, TransferKind

logger = logging.getLogger(__name__)

DUST_USD = Decimal("0.50")
COUNTED_KINDS = (TransferKind.MATCHED, TransferKind.LATE)
STORE_CHUNK = 500  # keys per IN (...) list: below SQLite's variable limit


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


class TransferAlreadyRecorded(Conflict):
    """A transfer recorded by hand is stored already (perhaps by a request at the same
    moment): the operator is told, and the stored row is left as it was."""

    def __init__(self):
        super().__init__(_("This transaction is already recorded."), field="txid")


def transfer_record(
    observed: ObservedTransfer, *, intent, recorded_by=None, new_only: bool = False
) -> Transfer:
    """Store one observed transfer, or update the stored one. Never counts it twice.

    `new_only` (a transfer recorded by hand): refuse one already stored, even by a
    concurrent request whose row the unique (network, txid, index) refused this one's,
    with `TransferAlreadyRecorded` (409) instead of updating it."""
    now = clock.now()
    fields = {
        "address": observed.address,
        "asset": observed.asset,
        "token_contract": observed.token_contract or "",
        "amount_base": observed.amount_base,
        "confirmations": observed.confirmations,
        "block_height": observed.block_height,
        "block_time": observed.block_time,
        "block_hash": observed.block_hash or "",
        "failed": observed.failed,
        "final": observed.final,
        "reference": observed.reference or "",
    }
    key = {"network": observed.network, "txid": observed.txid, "index": observed.index}
    with transaction.atomic():
        transfer = Transfer.objects.select_for_update().filter(**key).first()
        if transfer is not None and new_only:
            raise TransferAlreadyRecorded
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
                if new_only:
                    raise TransferAlreadyRecorded from None
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
        or transfer.block_hash != (observed.block_hash or "")
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
    "block_hash",
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


def transfers_mark_disappeared(
    *,
    network: str,
    addresses: set[str],
    seen_keys: set,
    blocks: tuple[int, int] | None = None,
    undecided: frozenset = frozenset(),
) -> set:
    """Unconfirmed transfers no longer reported at a scanned address were replaced or
    reorganised away: they stop counting (and count again if they come back). Returns the
    pks of the intents they belonged to.

    `blocks` (a block-window scan, Ethereum): only the transfers in those blocks are
    judged, however many confirmations they have (not final ones): the scan read every
    one of those blocks for every address, so one it did not report is no longer in the
    chain's blocks. `undecided`: transactions it saw but could not judge yet (no receipt,
    no transaction info, not served yet)."""
    touched = set()
    # Only transfers at watched addresses can be among them: those of watched intents, and
    # those no intent claimed (read in one query however many addresses were scanned).
    candidates = (
        Transfer.objects.filter(network=network, disappeared_at__isnull=True, final=False)
        .filter(Q(intent__isnull=True) | Q(intent__monitor_until__gt=clock.now()))
        .exclude(recorded_by__isnull=False)
        .exclude(kind=TransferKind.UNEXPLAINED)
        .only("pk", "txid", "index", "address", "reference", "disappeared_at", "intent_id")
    )
    if blocks is not None:
        candidates = candidates.filter(block_height__gte=blocks[0], block_height__lte=blocks[1])
    for transfer in candidates:
        if transfer.address not in addresses or (transfer.txid, transfer.index) in seen_keys:
            continue
        if transfer.txid in undecided:
            continue
        _transfer_disappeared(transfer)
        if transfer.intent_id is not None:
            touched.add(transfer.intent_id)
    return touched


# No transaction: the address a balance check read (index: the block it read it at).
UNEXPLAINED_PREFIX = "balance-"
UNEXPLAINED_TXID = UNEXPLAINED_PREFIX + "{address}"


def unexplained_balances_record(network: str, balances: dict, watched: list, *, block) -> set:
    """Money on our addresses that no stored transfer explains (`balances`: each address's
    balance in the native asset at `block`, from a scan): ETH a contract forwarded by an
    internal call is no transaction to us and no event, so only the balance shows it.
    Each excess over the transfers at the address up to `block` (and the excesses already
    recorded) opens a review case, a transfer of kind "unexplained" that never counts by
    itself: an operator attaches it to the payment (then it counts) or notes why not.
    Money sent out of the address (a sweep) hides as much unexplained money. Returns no
    intents: nothing counted changed."""
    if not balances:
        return set()
    native = {"ethereum": "ETH"}[network]
    by_address = {i.address: i for i in watched}
    explained: dict[str, int] = {}
    addresses = sorted(balances)
    for start in range(0, len(addresses), STORE_CHUNK):
        rows = (
            Transfer.objects.filter(
                network=network,
                address__in=addresses[start : start + STORE_CHUNK],
                asset=native,
                failed=False,
                disappeared_at__isnull=True,
            )
            # The excesses recorded before count as explained, whatever became of them.
            .filter(Q(block_height__lte=block) | Q(txid__startswith=UNEXPLAINED_PREFIX))
            .values_list("address")
            .annotate(total=Sum("amount_base"))
        )
        explained.update((address, int(total)) for address, total in rows)
    for address in addresses:
        excess = balances[address] - explained.get(address, 0)
        if excess <= 0:
            continue
        row = by_address.get(address)
        key = {"network": network, "txid": UNEXPLAINED_TXID.format(address=address)}
        now = clock.now()
        try:
            with transaction.atomic():
                transfer = Transfer.objects.create(
                    **key,
                    index=block,
                    address=address,
                    asset=native,
                    amount_base=excess,
                    # Read at a block the methods' confirmations below the head (the
                    # adapter's `balances_at`); only an operator's decision counts it.
                    confirmations=0,
                    final=True,
                    first_seen_at=now,
                    last_seen_at=now,
                    intent_id=row.pk if row is not None else None,
                    kind=TransferKind.UNEXPLAINED,
                )
                audit_record(
                    action="payment.unexplained_balance",
                    target=transfer,
                    after={
                        "address": address,
                        "block": block,
                        "balance_base": str(balances[address]),
                        "unexplained_base": str(excess),
                        "intent": str(row.pk) if row is not None else None,
                    },
                )
        except IntegrityError:
            continue  # recorded at this block already (a pass run twice)
        logger.warning(
            "%s: %s base units at %s that no transfer explains: review case opened",
            network,
            excess,
            address,
        )
    return set()
