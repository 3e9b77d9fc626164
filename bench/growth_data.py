"""The growth benchmark's data: orders, payment instructions, transfers, top-ups, ledger
entries and audit events for a set of customers, written with PostgreSQL COPY.

Rows are built in Python from a seeded random generator (the same data every run) with
realistic mixes: most orders settled and ended or cancelled, most instructions allocated
or expired, a few in an exception (most decided, some still open for review), transfers
matched to paid instructions plus dust, failed, spoofed and unallocated ones. Import after
django.setup().
"""

import random
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.db import connection
from django.db.models import Max
from psycopg.types.json import Jsonb

from kernodeck.accounts.models import User
from kernodeck.core.models import AuditEvent
from kernodeck.ledger.models import LedgerEntry, TopUp
from kernodeck.orders.models import Order
from kernodeck.orders.references import ALPHABET
from kernodeck.payments.models import PaymentIntent, PaymentMethod, Transfer

TOPUP_CHOICES = (Decimal("100"), Decimal("500"), Decimal("2000"), Decimal("10000"))
EXCEPTIONS = ("underpaid", "overpaid", "late")


@dataclass
class Sizes:
    orders: int
    order_intents: int
    topups: int
    topup_intents: int
    transfers: int
    open_intent_cases: int
    open_transfer_cases: int
    # Decided exceptions and review transfers, as a share of instructions and transfers.
    decided_share: float = 0.02


class Copier:
    """COPY rows of one model: each row a dict by attname; missing fields take the model's
    default (a required field without one is an error here, not a NULL in the database)."""

    def __init__(self, model):
        self.model = model
        self.fields = [f for f in model._meta.concrete_fields]
        self.defaults = {}
        for field in self.fields:
            if field.primary_key:
                continue  # every row gives its id
            value = field.get_default()
            if value is None and not field.null:
                continue
            self.defaults[field.attname] = Jsonb(value) if isinstance(value, dict) else value

    def copy(self, rows) -> int:
        names = [f.attname for f in self.fields]
        columns = ", ".join(connection.ops.quote_name(f.column) for f in self.fields)
        table = connection.ops.quote_name(self.model._meta.db_table)
        written = 0
        with connection.cursor() as cursor:
            raw = cursor.cursor  # psycopg's own cursor: COPY is not in the DB-API
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                defaults = self.defaults
                for row in rows:
                    copy.write_row([row[n] if n in row else defaults[n] for n in names])
                    written += 1
        return written


def next_id(model) -> int:
    return (model.objects.aggregate(last=Max("id"))["last"] or 0) + 1


def reset_sequence(model) -> None:
    """After rows with explicit ids, the identity sequence goes on from the largest."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)",
            [model._meta.db_table, next_id(model) - 1 or 1],
        )


def reference(n: int) -> str:
    chars = ""
    for _ in range(8):
        n, digit = divmod(n, 32)
        chars = ALPHABET[digit] + chars
    return f"KD-{chars[:4]}-{chars[4:]}"


def customers_create(count: int, *, now, start: int) -> list[int]:
    """`count` customer accounts with unusable passwords; their ids."""
    first = next_id(User)
    Copier(User).copy(
        {
            "id": first + i,
            "password": "!",
            "email": f"growth{start + i}@kernodeck.test",
            "first_name": "Growth",
            "last_name": f"Customer {start + i}",
            "date_joined": now - timedelta(days=800),
        }
        for i in range(count)
    )
    reset_sequence(User)
    return list(range(first, first + count))


def generate(*, customers, sizes: Sizes, now, span_days, offer, operator_id, seed, ids) -> dict:
    """Write the rows for `customers`, created over the last `span_days`; return a few
    references the benchmark uses. `ids` carries the running counters between calls."""
    rng = random.Random(seed)
    methods = list(PaymentMethod.objects.exclude(chain="solana").order_by("code"))
    span = span_days * 86400

    def when() -> object:
        # At least three hours ago: every attempt at paying has expired or been paid.
        return now - timedelta(seconds=rng.randrange(3 * 3600, span))

    # Orders: settled (most ended), cancelled, or still awaiting payment.
    orders = []
    first_order = next_id(Order)
    for i in range(sizes.orders):
        created = when()
        draw = rng.random()
        state = "settled" if draw < 0.62 else "cancelled" if draw < 0.88 else "awaiting_payment"
        units = rng.choice((1, 1, 1, 2, 4))
        days = rng.choice((3, 7, 7, 30))
        row = {
            "id": first_order + i,
            "reference": reference(first_order + i),
            "owner_id": customers[i % len(customers)],
            "offer_id": offer.pk,
            "offer_slug": offer.slug,
            "gpu_model": offer.gpu_model,
            "backend": offer.backend,
            "memory_gib": offer.memory_gib,
            "gpus_per_unit": offer.gpus_per_unit,
            "days": days,
            "units": units,
            "gpus": units * offer.gpus_per_unit,
            "preparation": "pytorch",
            "unit_price_usd": Decimal(30 * days) + Decimal("0.00"),
            "total_usd": Decimal(30 * units * days) + Decimal("0.00"),
            "payment_state": state,
            "created_at": created,
            "hold_until": created + timedelta(minutes=30),
        }
        if state == "settled":
            row["settled_at"] = created + timedelta(minutes=20)
            row["rental_state"] = "ended" if created < now - timedelta(days=31) else "queued"
            row["rental_state_changed_at"] = row["settled_at"]
            if row["rental_state"] == "ended":
                row["starts_at"] = created + timedelta(hours=1)
                row["ends_at"] = row["starts_at"] + timedelta(days=days)
        elif state == "cancelled":
            row["cancelled_at"] = created + timedelta(minutes=rng.randrange(1, 30))
        orders.append(row)

    # Top-ups: credited when their last instructions were paid.
    topups = []
    for i in range(sizes.topups):
        ids["topup"] += 1
        topups.append(
            {
                "id": _uuid(ids["topup"]),
                "account_id": customers[i % len(customers)],
                "amount_usd": rng.choice(TOPUP_CHOICES),
                "status": "awaiting_payment",
                "created_at": when(),
            }
        )

    # Instructions: every order and top-up gets one while there are enough, the rest are
    # second and third attempts; the last one of a paid parent is the allocated one.
    def attempts(parents, count):
        per = [1 if i < count else 0 for i in range(len(parents))]
        for _ in range(count - min(count, len(parents))):
            per[rng.randrange(len(parents))] += 1
        return per

    intents = []
    for kind, parents, count in (
        ("order", orders, sizes.order_intents),
        ("topup", topups, sizes.topup_intents),
    ):
        for parent, n in zip(parents, attempts(parents, count), strict=True):
            for attempt in range(n):
                last = attempt == n - 1
                method = rng.choice(methods)
                ids["intent"] += 1
                k = ids["intent"]
                created = parent["created_at"] + timedelta(minutes=2 + 40 * attempt)
                row = {
                    "id": _uuid(k),
                    "purpose": kind,
                    f"{kind}_id": parent["id"],
                    "owner_id": parent["owner_id" if kind == "order" else "account_id"],
                    "method_id": method.code,
                    "chain": method.chain,
                    "address": f"growth{k:012d}",
                    "wallet_fingerprint": "growth00",
                    "derivation_index": k,
                    "amount_base": Decimal(rng.randrange(10_000, 10**8)),
                    "amount_usd": parent["total_usd" if kind == "order" else "amount_usd"],
                    "rate_usd_per_coin": Decimal("97000.0000000000"),
                    "rate_source": "kraken",
                    "rate_fetched_at": created,
                    "uri": f"{method.chain}:growth{k:012d}",
                    "created_at": created,
                    "expires_at": created + timedelta(minutes=30),
                    "monitor_until": created + timedelta(days=7),
                    "status": "expired",
                }
                paid = last and (
                    parent.get("payment_state") == "settled"
                    or (kind == "topup" and rng.random() < 0.8)
                )
                if paid:
                    row["status"] = "allocated"
                    row["received_base"] = row["confirmed_base"] = row["amount_base"]
                    row["reconciled_at"] = created + timedelta(minutes=15)
                    if kind == "topup":
                        parent["status"] = "credited"
                        parent["credited_at"] = row["reconciled_at"]
                        parent["intent_id"] = row["id"]
                elif parent.get("payment_state") == "cancelled":
                    row["closed_at"] = parent["cancelled_at"]
                    row["closed_reason"] = "order_cancelled"
                elif last and row["expires_at"] > now:
                    row["status"] = "pending"
                intents.append(row)

    # Exceptions: a few decided ones (credited, refunded or settled), some still open.
    exception_rows = rng.sample(
        [r for r in intents if r["status"] in ("allocated", "expired")],
        min(len(intents), int(len(intents) * sizes.decided_share) + sizes.open_intent_cases),
    )
    for n, row in enumerate(exception_rows):
        row["status"] = rng.choice(EXCEPTIONS)
        row["received_base"] = row["amount_base"] + (1 if row["status"] == "overpaid" else -1)
        row["review_reason"] = "Growth benchmark: amount differs"
        if n >= sizes.open_intent_cases:
            row["resolution"] = rng.choice(("credited", "refunded", "settled"))
            row["resolution_reason"] = "decided"
            row["resolved_by_id"] = operator_id
            row["resolved_at"] = row["created_at"] + timedelta(days=1)

    # Transfers: one per paid or exceptional instructions, the rest dust, failed and
    # spoofed sends to known addresses, plus unallocated and wrong-asset ones (review).
    paid = [r for r in intents if r["status"] not in ("expired", "pending")]
    transfers = []
    review_open = sizes.open_transfer_cases
    review_decided = int(sizes.transfers * sizes.decided_share / 4)
    first_transfer = next_id(Transfer)
    for i in range(sizes.transfers):
        t_id = first_transfer + i
        if i < len(paid):
            intent, kind = paid[i], ("late" if paid[i]["status"] == "late" else "matched")
        elif i < len(paid) + review_open + review_decided:
            intent, kind = None, rng.choice(("unallocated", "wrong_asset"))
        else:
            intent = rng.choice(intents)
            kind = rng.choice(("dust", "dust", "dust", "failed", "spoofed"))
        seen = (intent["created_at"] + timedelta(minutes=5)) if intent else when()
        row = {
            "id": t_id,
            "network": intent["chain"] if intent else "bitcoin",
            "txid": f"{t_id:064x}",
            "index": 0,
            "address": intent["address"] if intent else f"stray{t_id:012d}",
            "asset": "BTC",
            "amount_base": intent["received_base"] if kind in ("matched", "late") else 546,
            "confirmations": 12,
            "block_height": 800_000 + i,
            "block_time": seen,
            "first_seen_at": seen,
            "last_seen_at": seen,
            "failed": kind == "failed",
            "final": True,
            "intent_id": intent["id"] if intent else None,
            "kind": kind,
        }
        if intent is None and i >= len(paid) + review_open:
            row["review_resolved_at"] = seen + timedelta(days=1)
            row["review_note"] = "decided"
        transfers.append(row)

    # Ledger: credited top-ups and credited exceptions, then balance payments where the
    # balance allows, numbered per account in time order with the balance after each.
    events = [
        (t["credited_at"], "topup_credit", t["amount_usd"], t["account_id"], t)
        for t in topups
        if t["status"] == "credited"
    ]
    events += [
        (r["resolved_at"], "overpayment_credit", Decimal("5.00"), r["owner_id"], r)
        for r in exception_rows
        if r.get("resolution") == "credited"
    ]
    settled_orders = [o for o in orders if o["payment_state"] == "settled"]
    events += [
        (o["settled_at"], "order_charge", -o["total_usd"], o["owner_id"], o)
        for o in rng.sample(settled_orders, len(settled_orders) // 5)
    ]
    events.sort(key=lambda e: (e[3], e[0]))
    entries, balances, sequences = [], {}, {}
    first_entry = next_id(LedgerEntry)
    for at, kind, amount, account, cause in events:
        balance = balances.get(account, Decimal("0")) + amount
        if balance < 0:
            continue
        balances[account] = balance
        sequences[account] = sequences.get(account, 0) + 1
        row = {
            "id": first_entry + len(entries),
            "account_id": account,
            "sequence": sequences[account],
            "kind": kind,
            "amount_usd": amount,
            "balance_after_usd": balance,
            "created_at": at,
        }
        if kind == "topup_credit":
            row["topup_id"], row["intent_id"] = cause["id"], cause["intent_id"]
        elif kind == "overpayment_credit":
            row["intent_id"], row["actor_id"] = cause["id"], operator_id
        else:
            row["order_id"] = cause["id"]
        entries.append(row)

    # Audit trail of the orders: registered, then settled or cancelled.
    audits = []
    first_audit = next_id(AuditEvent)
    for o in orders:
        steps = [("order.registered", o["created_at"], o["owner_id"])]
        if o["payment_state"] == "settled":
            steps.append(("order.settled", o["settled_at"], None))
        elif o["payment_state"] == "cancelled":
            steps.append(("order.cancelled", o["cancelled_at"], o["owner_id"]))
        for action, at, actor in steps:
            audits.append(
                {
                    "id": first_audit + len(audits),
                    "created_at": at,
                    "actor_id": actor,
                    "action": action,
                    "target_type": "orders.order",
                    "target_id": str(o["id"]),
                }
            )

    counts = {
        "orders": Copier(Order).copy(orders),
        "topups": Copier(TopUp).copy(topups),
        "intents": Copier(PaymentIntent).copy(intents),
        "transfers": Copier(Transfer).copy(transfers),
        "ledger entries": Copier(LedgerEntry).copy(entries),
        "audit events": Copier(AuditEvent).copy(audits),
    }
    for model in (Order, Transfer, LedgerEntry, AuditEvent):
        reset_sequence(model)
    # The order file shows a settled order with two instructions and its transfers.
    focus = next(
        (
            o
            for o in sorted(orders, key=lambda o: o["created_at"], reverse=True)
            if o["payment_state"] == "settled"
            and sum(1 for r in intents if r.get("order_id") == o["id"]) >= 2
        ),
        orders[0],
    )
    return {"counts": counts, "order_reference": focus["reference"]}


def _uuid(n: int):
    import uuid

    return uuid.UUID(int=(0x6B64 << 112) | n)
