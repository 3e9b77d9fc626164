"""SOL payments through Solana JSON-RPC, found by their Solana Pay reference key.

Each intent has a fresh reference key that the wallet adds to the transfer as a read-only
account, so getSignaturesForAddress(reference) lists exactly the payments of that intent. A
target without a reference watches the shared recipient itself (wallets that drop the
reference; the watcher matches those by their unique amount). Each signature is then read with
getTransaction, and the credit is the recipient's postBalance - preBalance in lamports.

Commitment is "confirmed" throughout: the tip is the newest confirmed slot, so
confirmations = tip - slot + 1 counts confirmed slots, and `final` comes from the signature's
own confirmationStatus ("finalized"). getSignaturesForAddress and getTransaction do not accept
"processed". A failed transaction moves no lamports to the recipient (only the fee payer pays),
so its credit is 0 and it is not reported; one with a positive credit and an error would be
reported with failed=True and never credited.

What the watcher un-counts: every pass polls the open instructions' keys and the recipient,
and a stored transfer that is not final and no longer listed (its fork was dropped), or
listed with an error, is marked disappeared (payments.watching); a signature listed whose
transaction this node does not serve yet is `undecided` instead (judged on a later scan).

`scan_since` reads one signature list per recipient instead, `until` the newest finalized
signature a pass fully processed: every payment to the recipient lists it, so a pass costs
the new signatures, not the number of open payments.
"""

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from kernodeck.payments.chains.base import (
    ChainError,
    ObservedTransfer,
    PollScan,
    ScanResult,
    WatchTarget,
    json_int,
    unix_time,
)
from kernodeck.payments.chains.http import DEFAULT_TIMEOUT, new_client, rpc_call

logger = logging.getLogger(__name__)

COMMITMENT = "confirmed"
MAX_LAMPORTS = 2**64 - 1  # balances are u64 on chain
SIGNATURES_LIMIT = 100  # newest signatures per watched key; a reference sees one or two
MAX_SIGNATURE_PAGES = 10  # pages of the recipient's signatures read since its cursor
# The cursor of a recipient whose whole list was read and held nothing finalized yet (no
# signature to run `until`; never one itself: base58 has no 0): its list is read whole.
FROM_THE_START = "0"


class SolanaAdapter:
    """Credits to our Solana recipient, by Solana Pay reference or to the recipient itself."""

    network = "solana"

    def __init__(
        self,
        base_url: str,
        timeout: float = DEFAULT_TIMEOUT,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.base_url = base_url
        self.timeout = timeout
        self.sleep = sleep

    def scan(self, targets: Sequence[WatchTarget], *, cursor: int | None = None) -> ScanResult:
        """Every positive SOL credit to the targets' recipient; `cursor` is not used."""
        references = {target.reference for target in targets if target.reference}
        transfers: dict[str, ObservedTransfer] = {}
        fetched: dict[str, Any] = {}  # signature -> getTransaction result, one call per scan
        undecided: set[str] = set()  # listed, not served yet: not judged gone this scan
        # References first: a payment seen both ways keeps the reference it carries.
        ordered = sorted(targets, key=lambda target: target.reference is None)
        with new_client() as client:
            tip = _int(self._call(client, "getSlot", [{"commitment": COMMITMENT}]), "slot")
            for target in ordered:
                for entry in self._signatures(client, target.reference or target.address):
                    signature = entry["signature"]
                    if signature in transfers or entry.get("err") is not None:
                        continue  # failed: no lamports moved to us, no call needed
                    if signature not in fetched:
                        fetched[signature] = self._transaction(client, signature)
                    if fetched[signature] is None:
                        undecided.add(signature)
                        continue
                    transfer = _credit(fetched[signature], entry, target, references, tip)
                    if transfer is not None:
                        transfers[signature] = transfer
        return ScanResult(
            transfers=list(transfers.values()), tip=tip, undecided=frozenset(undecided)
        )

    def scan_since(self, targets: Sequence[WatchTarget], *, cursors: dict) -> PollScan:
        """What `scan` reports, from one signature list per recipient instead of one per
        reference: every SOL payment to the recipient lists it, whatever its reference.
        The list runs `until` the recipient's cursor (paged with `before`); the new cursor
        is the newest finalized signature below which every listed one was processed. A
        recipient without a cursor yet also has its targets' references read (as `scan`
        does), since its own list may not reach back to the oldest open payment."""
        references = {target.reference for target in targets if target.reference}
        recipients = sorted({target.address for target in targets})
        transfers: dict[str, ObservedTransfer] = {}
        fetched: dict[str, Any] = {}
        positions, complete, undecided = {}, set(), set()
        with new_client() as client:
            tip = _int(self._call(client, "getSlot", [{"commitment": COMMITMENT}]), "slot")

            def credit(entry: dict, target: WatchTarget) -> bool:
                """Report the entry's credit to `target`; False if it could not be read."""
                signature = entry["signature"]
                if signature in transfers or entry.get("err") is not None:
                    return True
                if signature not in fetched:
                    fetched[signature] = self._transaction(client, signature)
                if fetched[signature] is None:
                    undecided.add(signature)
                    return False
                transfer = _credit(fetched[signature], entry, target, references, tip)
                if transfer is not None:
                    transfers[signature] = transfer
                return True

            for recipient in recipients:
                until = cursors.get(recipient)
                if until is None:
                    for target in targets:
                        if target.address == recipient and target.reference:
                            for entry in self._signatures(client, target.reference):
                                credit(entry, target)
                start = None if until == FROM_THE_START else until
                entries, whole = self._signatures_until(client, recipient, start)
                position = until if until is not None or not whole else FROM_THE_START
                moving = whole or until is None  # a cut list keeps its cursor
                for entry in reversed(entries):  # oldest first
                    read = credit(entry, WatchTarget(recipient))
                    moving = moving and read and entry.get("confirmationStatus") == "finalized"
                    if moving:
                        position = entry["signature"]
                if whole:
                    complete.add(recipient)
                if position is not None:
                    positions[recipient] = position
        return PollScan(
            transfers=list(transfers.values()),
            tip=tip,
            undecided=frozenset(undecided),
            cursors=positions,
            complete=frozenset(complete),
        )

    def _signatures_until(
        self, client: httpx.Client, key: str, until: str | None
    ) -> tuple[list[dict], bool]:
        """The signatures of `key` newer than `until` (all of them when None, up to
        MAX_SIGNATURE_PAGES pages), newest first, and whether the list was read to its end."""
        options: dict = {"limit": SIGNATURES_LIMIT, "commitment": COMMITMENT}
        if until is not None:
            options["until"] = until
        entries: list[dict] = []
        for _ in range(MAX_SIGNATURE_PAGES):
            page = self._call(client, "getSignaturesForAddress", [key, options])
            if not isinstance(page, list) or not all(
                isinstance(entry, dict) and isinstance(entry.get("signature"), str)
                for entry in page
            ):
                raise ChainError(f"solana: getSignaturesForAddress({key}) is not a signature list")
            entries.extend(page)
            if len(page) < SIGNATURES_LIMIT:
                return entries, True
            options = {**options, "before": page[-1]["signature"]}
        logger.warning(
            "solana: stopped reading the signatures of %s after %d pages", key, len(entries)
        )
        return entries, False

    def _call(self, client: httpx.Client, method: str, params: list) -> Any:
        return rpc_call(
            self.base_url, method, params, timeout=self.timeout, sleep=self.sleep, client=client
        )

    def _signatures(self, client: httpx.Client, key: str) -> list[dict]:
        options = {"limit": SIGNATURES_LIMIT, "commitment": COMMITMENT}
        entries = self._call(client, "getSignaturesForAddress", [key, options])
        if not isinstance(entries, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("signature"), str)
            for entry in entries
        ):
            raise ChainError(f"solana: getSignaturesForAddress({key}) is not a signature list")
        if len(entries) >= SIGNATURES_LIMIT:
            logger.warning(
                "solana: %s has %d or more signatures; older ones not scanned",
                key,
                SIGNATURES_LIMIT,
            )
        return entries

    def _transaction(self, client: httpx.Client, signature: str) -> dict | None:
        """The transaction, or None while this node does not serve it yet (next round)."""
        options = {
            "encoding": "json",
            "maxSupportedTransactionVersion": 0,
            "commitment": COMMITMENT,
        }
        result = self._call(client, "getTransaction", [signature, options])
        if result is not None and not isinstance(result, dict):
            raise ChainError(f"solana: getTransaction({signature}) is not an object")
        return result


def _account_keys(result: dict, meta: dict, signature: str) -> list[str]:
    """Every account of the transaction in balance order: the message's keys, then (v0) the
    writable and read-only addresses loaded from lookup tables."""
    transaction = result.get("transaction")
    message = transaction.get("message") if isinstance(transaction, dict) else None
    keys = message.get("accountKeys") if isinstance(message, dict) else None
    if not isinstance(keys, list):
        raise ChainError(f"solana: {signature} has no accountKeys")
    loaded = meta.get("loadedAddresses")
    loaded = loaded if isinstance(loaded, dict) else {}
    writable, readonly = loaded.get("writable", []), loaded.get("readonly", [])
    if not isinstance(writable, list) or not isinstance(readonly, list):
        raise ChainError(f"solana: {signature} has loadedAddresses that are not lists")
    keys = [*keys, *writable, *readonly]
    # jsonParsed answers give {"pubkey": ...} objects; json answers give plain strings.
    keys = [key.get("pubkey") if isinstance(key, dict) else key for key in keys]
    if not all(isinstance(key, str) for key in keys):
        raise ChainError(f"solana: {signature} has an account key that is not text")
    return keys


def _balances(meta: dict, name: str, signature: str) -> list[int]:
    values = meta.get(name)
    if not isinstance(values, list):
        raise ChainError(f"solana: {signature} has no {name}")
    return [json_int(value, f"solana: {name}", high=MAX_LAMPORTS) for value in values]


def _int(value: Any, what: str) -> int:
    """A slot (or other height-like number) from the answer, checked like every height."""
    return json_int(value, f"solana: {what}")


def _credit(
    result: dict | None, entry: dict, target: WatchTarget, references: set[str], tip: int
) -> ObservedTransfer | None:
    """The transfer `result` makes to the target's recipient; None if it is not a credit."""
    if result is None:
        return None
    signature = entry["signature"]
    meta = result.get("meta")
    if not isinstance(meta, dict):
        return None  # no status metadata (very old ledger): cannot tell a credit
    keys = _account_keys(result, meta, signature)
    if target.address not in keys:
        return None
    index = keys.index(target.address)
    pre = _balances(meta, "preBalances", signature)
    post = _balances(meta, "postBalances", signature)
    if index >= len(pre) or index >= len(post):
        raise ChainError(f"solana: {signature} has fewer balances than account keys")
    credit = post[index] - pre[index]
    if credit <= 0:
        return None  # a debit, an unchanged balance, or a failed transaction
    reference = target.reference if target.reference in keys else None
    if reference is None:
        reference = next((key for key in keys if key in references), None)
    slot = _int(result.get("slot", entry.get("slot")), "slot")
    block_time = result.get("blockTime") or entry.get("blockTime")
    return ObservedTransfer(
        network="solana",
        txid=signature,
        index=0,
        address=target.address,
        asset="SOL",
        amount_base=credit,
        confirmations=max(tip - slot + 1, 0),
        block_height=slot,
        block_time=(
            unix_time(block_time, "solana: blockTime") if block_time is not None else None
        ),
        failed=meta.get("err") is not None,
        final=entry.get("confirmationStatus") == "finalized",
        reference=reference,
    )
