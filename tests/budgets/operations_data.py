"""Bulk data for the staff pages' query budgets: `size` rentals on `size` nodes, and `size`
support tickets with their threads, written in a few INSERTs.

Rentals cycle through the desk's states (queued, preparing, failed, active); the first
hundred hold a live allocation on their own node (NODES_AT_MOST); their owners (a tenth of
`size`, at least two) hold two SSH keys each. Every ticket has a customer message with an
attachment and a staff answer; every third asks for an extension. The first node has served
every rental before (its step log reads them all).
"""

from dataclasses import dataclass
from datetime import timedelta

from kernodeck.accounts.models import ApiToken, SshKey
from kernodeck.accounts.services import api_token_create
from kernodeck.core import clock
from kernodeck.orders.models import Order, PaymentState, RentalState
from kernodeck.provisioning.models import Allocation, GpuSlot, Node
from kernodeck.support.models import (
    AccessRequest,
    Attachment,
    Extension,
    Kind,
    Message,
    Ticket,
)
from tests.factories import make_offer, make_user, order_row

STATES = (
    RentalState.QUEUED,
    RentalState.PREPARING,
    RentalState.PROVISIONING_FAILED,
    RentalState.ACTIVE,
)
ATTACHMENT_BYTES = 64 * 1024
# The fleet pages render every node; beyond this many, rendering (not queries) dominates.
NODES_AT_MOST = 100


@dataclass
class Operations:
    customer: object
    operator: object
    token: str
    operator_token: str
    node: Node
    rental: Order
    ticket: Ticket


def build(size: int) -> Operations:
    now = clock.now()
    operator = make_user(staff=True, is_superuser=True)
    owners = [make_user() for _ in range(max(2, size // 10))]
    customer = owners[0]
    token, raw = api_token_create(user=customer, name="budgets")
    operator_token, operator_raw = api_token_create(user=operator, name="budgets")
    ApiToken.objects.filter(pk__in=[token.pk, operator_token.pk]).update(last_used_at=now)
    offer = make_offer(units_total=0)
    SshKey.objects.bulk_create(
        SshKey(
            user=owner,
            name=f"key {k}",
            key_type=SshKey.KeyType.ED25519,
            bits=256,
            public_key=f"ssh-ed25519 AAAAbudget{i}x{k}",
            fingerprint=f"SHA256:budget{i:05d}{k}",
            created_at=now,
        )
        for i, owner in enumerate(owners)
        for k in range(2)
    )
    nodes = Node.objects.bulk_create(
        Node(
            name=f"node-{i:05d}",
            offer=offer,
            gpu_count=2,
            host=f"10.0.{i // 250}.{i % 250 + 1}",
            driver="ssh",
            state="available",
            host_key=f"ssh-ed25519 AAAAhost{i}",
            created_at=now,
        )
        for i in range(min(size, NODES_AT_MOST))
    )
    slots = GpuSlot.objects.bulk_create(
        GpuSlot(node=node, index=index, uuid=f"GPU-{node.name}-{index}")
        for node in nodes
        for index in range(2)
    )
    rentals = Order.objects.bulk_create(
        order_row(
            offer=offer,
            reference=f"KD-R{i:08d}",
            owner=owners[i % len(owners)],
            days=7,
            price="210.00",
            created_at=now - timedelta(days=1, minutes=i),
            hold_until=now - timedelta(days=1),
            payment_state=PaymentState.SETTLED,
            settled_at=now - timedelta(hours=20, minutes=i),
            rental_state=STATES[i % len(STATES)],
            rental_state_changed_at=now - timedelta(hours=19, minutes=i),
            starts_at=now - timedelta(hours=19) if STATES[i % 4] == RentalState.ACTIVE else None,
            ends_at=now + timedelta(days=6) if STATES[i % 4] == RentalState.ACTIVE else None,
        )
        for i in range(size)
    )
    # Each rental holds slot 0 of its own node; every rental also ran on the first node
    # before (released), so that node's page reads them all.
    Allocation.objects.bulk_create(
        [
            Allocation(order=rental, slot=slots[2 * i], unit=1, allocated_at=now)
            for i, rental in enumerate(rentals[: len(nodes)])
        ]
        + [
            Allocation(
                order=rental,
                slot=slots[1],
                unit=1,
                allocated_at=now - timedelta(days=2),
                release_requested_at=now - timedelta(days=1),
                released_at=now - timedelta(days=1),
            )
            for rental in rentals
        ]
    )

    tickets = Ticket.objects.bulk_create(
        Ticket(
            owner=customer,
            kind=Kind.EXTENSION if i % 3 == 0 else Kind.OTHER,
            order=rentals[i] if i % 3 == 0 else None,
            subject=f"Question {i}",
            status="open",
            created_at=now - timedelta(minutes=i),
            last_customer_at=now - timedelta(minutes=i),
            last_staff_at=now,
            updated_at=now - timedelta(minutes=i),
        )
        for i in range(size)
    )
    messages = Message.objects.bulk_create(
        Message(
            ticket=ticket,
            author=operator if staff else customer,
            from_staff=staff,
            body="An answer." if staff else "A question.",
            created_at=now - timedelta(minutes=i) + timedelta(seconds=1 if staff else 0),
        )
        for i, ticket in enumerate(tickets)
        for staff in (False, True)
    )
    payload = bytes(ATTACHMENT_BYTES)
    Attachment.objects.bulk_create(
        Attachment(
            message=message,
            name="log.txt",
            content_type="text/plain",
            size=len(payload),
            data=payload,
            created_at=now,
        )
        for message in messages
        if not message.from_staff
    )
    Extension.objects.bulk_create(
        Extension(ticket=ticket, order=ticket.order, requested_days=3, created_at=now)
        for ticket in tickets
        if ticket.order_id
    )
    AccessRequest.objects.bulk_create(
        AccessRequest(
            email=f"lost{i}@example.org",
            name="Lost",
            body="I cannot sign in.",
            language="en",
            created_at=now - timedelta(minutes=i),
            updated_at=now,
        )
        for i in range(size)
    )
    return Operations(
        customer=customer,
        operator=operator,
        token=raw,
        operator_token=operator_raw,
        node=nodes[0],
        rental=rentals[3],
        ticket=tickets[0],
    )
