"""Bulk test data for the query budgets: `size` rows of every kind, written in a few INSERTs.

One customer owns everything; `focus` objects (the first order, its instructions, the first
top-up) get a share that grows with `size`, so that detail pages are measured with many
related rows too (transfers at one address, timeline events of one order).
"""

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from kernodeck.accounts import services as account_services
from kernodeck.accounts.models import ApiToken
from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.ledger.models import EntryKind, LedgerEntry, TopUp
from kernodeck.notifications.models import OutboxMessage
from kernodeck.orders.models import Order
from kernodeck.payments.models import IntentStatus, PaymentIntent, PaymentMethod, Transfer
from kernodeck.payments.services import payment_methods_ensure
from tests.factories import make_offer, make_user, order_row

METHOD = "btc-bitcoin"


@dataclass
class Dataset:
    customer: object
    operator: object
    token: str
    offer: object
    order: Order
    intent: PaymentIntent
    topup: TopUp
    review_intent: PaymentIntent
    review_transfer: Transfer


def _intent(i, *, owner, method, now, **fields) -> PaymentIntent:
    return PaymentIntent(
        owner=owner,
        method=method,
        chain=method.chain,
        address=f"bc1qbudget{i:08d}",
        wallet_fingerprint="budgets0",
        derivation_index=i,
        amount_base=Decimal(100_000 + i),
        amount_usd=Decimal("97.00"),
        rate_usd_per_coin=Decimal("97000"),
        rate_source="kraken",
        rate_fetched_at=now,
        uri=f"bitcoin:bc1qbudget{i:08d}?amount=0.001",
        created_at=now - timedelta(minutes=i),
        expires_at=now + timedelta(hours=1),
        monitor_until=now + timedelta(days=7),
        **fields,
    )


def build(size: int) -> Dataset:
    """`size` orders, top-ups, order instructions, top-up instructions, transfers, ledger
    entries, audit events and outbox e-mails, plus an operator; returns what pages show."""
    payment_methods_ensure()
    now = clock.now()
    customer = make_user()
    operator = make_user(staff=True, is_superuser=True)
    token, raw = account_services.api_token_create(user=customer, name="budgets")
    # Used a moment ago: API requests within the minute do not write it (steady state).
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    offer = make_offer(units_total=5)
    method = PaymentMethod.objects.get(code=METHOD)

    orders = Order.objects.bulk_create(
        order_row(
            offer=offer,
            reference=f"KD-B{i:08d}",
            owner=customer,
            days=7,
            price="210.00",
            created_at=now - timedelta(minutes=i),
            # Only the focus order still holds its unit: the fleet is not exhausted.
            hold_until=now + timedelta(hours=1) if i == 0 else now - timedelta(days=1),
        )
        for i in range(size)
    )
    topups = TopUp.objects.bulk_create(
        TopUp(account=customer, amount_usd=Decimal("100"), created_at=now - timedelta(minutes=i))
        for i in range(size)
    )
    # One set of instructions per order and per top-up; every third order's is in an
    # exception (underpaid) so that the review queue holds about size/3 cases.
    intents = PaymentIntent.objects.bulk_create(
        [
            _intent(
                i,
                owner=customer,
                method=method,
                now=now,
                purpose="order",
                order=order,
                status=IntentStatus.UNDERPAID if i % 3 == 1 else IntentStatus.PENDING,
                review_reason="Underpaid by 10 %" if i % 3 == 1 else "",
            )
            for i, order in enumerate(orders)
        ]
        + [
            _intent(size + i, owner=customer, method=method, now=now, purpose="topup", topup=t)
            for i, t in enumerate(topups)
        ]
    )
    focus_intent = intents[0]
    review_intent = intents[1]
    # Transfers: a tenth at the focus instructions' address, the rest spread over the others,
    # and a tenth that no instructions could take (the review queue's second list).
    share = max(1, size // 10)
    transfers = Transfer.objects.bulk_create(
        Transfer(
            network="bitcoin",
            txid=f"{i:064x}",
            index=0,
            address=intent.address if intent else f"bc1qstray{i:08d}",
            asset="BTC",
            amount_base=Decimal(1000 + i),
            confirmations=1,
            first_seen_at=now - timedelta(minutes=i),
            last_seen_at=now,
            intent=intent,
            kind="matched" if intent else "unallocated",
        )
        for i, intent in (
            (i, focus_intent if i < share else None if i >= size - share else intents[i])
            for i in range(size)
        )
    )
    review_transfer = next(t for t in transfers if t.intent_id is None)

    # Ledger entries of three kinds, so every cause (actor, top-up, order) is on the page.
    entries, balance = [], Decimal("0")
    for i in range(size):
        kind = (EntryKind.ADJUSTMENT, EntryKind.TOPUP_CREDIT, EntryKind.ORDER_CHARGE)[i % 3]
        amount = {"adjustment": "10.00", "topup_credit": "100.00", "order_charge": "-5.00"}[kind]
        balance += Decimal(amount)
        entries.append(
            LedgerEntry(
                account=customer,
                sequence=i + 1,
                kind=kind,
                amount_usd=Decimal(amount),
                balance_after_usd=balance,
                created_at=now - timedelta(minutes=size - i),
                actor=operator if kind == EntryKind.ADJUSTMENT else None,
                topup=topups[i] if kind == EntryKind.TOPUP_CREDIT else None,
                intent=intents[size + i] if kind == EntryKind.TOPUP_CREDIT else None,
                order=orders[i] if kind == EntryKind.ORDER_CHARGE else None,
                memo="budget data",
            )
        )
    LedgerEntry.objects.bulk_create(entries)

    # Audit events: a tenth on the focus order (its timeline), the rest on other orders.
    AuditEvent.objects.bulk_create(
        AuditEvent(
            created_at=now - timedelta(minutes=size - i),
            actor=operator if i % 2 else customer,
            action="order.hold_extended",
            target_type="orders.order",
            target_id=str(orders[0].pk if i < share else orders[i].pk),
        )
        for i in range(size)
    )
    OutboxMessage.objects.bulk_create(
        OutboxMessage(
            dedupe_key=f"budgets:{i}",
            account=customer,
            event="order.registered",
            language="en",
            to_email=customer.email,
            subject=f"Order {orders[i].reference}",
            body_text="budget data",
            created_at=now - timedelta(minutes=i),
            next_attempt_at=now,
        )
        for i in range(size)
    )
    return Dataset(
        customer=customer,
        operator=operator,
        token=raw,
        offer=offer,
        order=orders[0],
        intent=focus_intent,
        topup=topups[0],
        review_intent=review_intent,
        review_transfer=review_transfer,
    )
