"""The rental lifecycle: settle → queued → allocated → preparing → active → ended, and the
moves around it (fail, retry, refund, suspend, resume), each audited."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.orders import capacity
from kernodeck.orders.models import RENTAL_TRANSITIONS, Order, RentalState
from kernodeck.provisioning import selectors, services
from kernodeck.provisioning.models import Allocation, Delivery
from kernodeck.settlement import orders as settlement_orders
from tests.factories import (
    make_offer,
    make_operator,
    make_order,
    make_settled_order,
    make_ssh_key,
)

# Real commits, so the tasks scheduled with on_commit run as they do in production.
pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def deliver(order, operator, **extra):
    fields = {"host": "gpu1.example.org", "port": 2222, "user": "kd-abc"} | extra
    return services.rental_deliver(order=order, actor=operator, **fields)


def test_settlement_queues_and_allocates_each_unit_on_one_node():
    offer = make_offer(gpus_per_unit=2, units_total=8)  # two nodes of 8 GPUs
    order = make_settled_order(offer=offer, units=3)

    assert order.rental_state == RentalState.QUEUED
    assert selectors.allocation_of(order) == [
        {"node": f"{offer.slug}-01", "slots": [0, 1, 2, 3, 4, 5]}
    ]
    units = Allocation.objects.filter(order=order).values_list("unit", "slot__index")
    assert sorted(units) == [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4), (2, 5)]
    assert capacity.units_free(offer=offer) == 5
    assert "allocated" in order.rental_reason


def test_an_order_lands_on_as_few_nodes_as_possible():
    offer = make_offer(units_total=16)  # nodes -01 and -02, 8 GPUs each
    first = make_settled_order(offer=offer, units=3)  # tightest fit: -01
    second = make_settled_order(offer=offer, units=7)  # only -02 holds 7 at once

    assert selectors.allocation_of(first) == [{"node": f"{offer.slug}-01", "slots": [0, 1, 2]}]
    assert selectors.allocation_of(second) == [
        {"node": f"{offer.slug}-02", "slots": [0, 1, 2, 3, 4, 5, 6]}
    ]
    third = make_settled_order(offer=offer, units=6)  # 5 left on -01, 1 on -02: both
    assert selectors.allocation_of(third) == [
        {"node": f"{offer.slug}-01", "slots": [3, 4, 5, 6, 7]},
        {"node": f"{offer.slug}-02", "slots": [7]},
    ]
    assert capacity.units_free(offer=offer) == 0


def test_without_free_slots_an_order_waits_queued_with_the_reason_until_slots_return():
    offer = make_offer(units_total=2)  # one node, two slots
    node = offer.nodes.get()
    operator = make_operator()
    first, second = make_order(offer=offer), make_order(offer=offer)
    services.node_state_set(node=node, state="maintenance", reason="fan", actor=operator)

    for order in (first, second):
        settlement_orders.order_settle(order=order, cause={"test": 1})
        order.refresh_from_db()
        assert order.rental_state == RentalState.QUEUED
        assert order.rental_reason == "Waiting for free GPUs: needs 1 units, 0 free now."
    assert not Allocation.objects.exists()
    assert capacity.units_free(offer=offer) == 0

    services.node_state_set(node=node, state="available", reason="fixed", actor=operator)

    assert selectors.allocation_of(first) == [{"node": node.name, "slots": [0]}]
    assert selectors.allocation_of(second) == [{"node": node.name, "slots": [1]}]
    assert capacity.units_free(offer=offer) == 0


def test_the_full_manual_path_with_dates():
    clock.freeze(T0)
    offer = make_offer(units_total=4)
    order = make_settled_order(offer=offer, days=7)
    operator = make_operator()
    make_ssh_key(order.owner)

    order = services.rental_prepare(order=order, actor=operator)
    assert order.rental_state == RentalState.PREPARING
    clock.freeze(T0 + timedelta(hours=1))
    order = deliver(order, operator, url="https://127.0.0.1:8888/lab", token="nb-secret-123")

    assert order.rental_state == RentalState.ACTIVE
    assert order.starts_at == T0 + timedelta(hours=1)
    assert order.ends_at == T0 + timedelta(days=7, hours=1)
    access = selectors.access_for_owner(order=order)
    assert access.ssh_command == "ssh -p 2222 kd-abc@gpu1.example.org"
    assert access.token == "nb-secret-123"
    assert access.tunnel_command == "ssh -N -L 8888:127.0.0.1:8888 -p 2222 kd-abc@gpu1.example.org"
    moves = list(
        AuditEvent.objects.filter(action="order.rental_state_changed", target_id=str(order.pk))
        .order_by("id")
        .values_list("after__rental_state", flat=True)
    )
    assert moves == ["queued", "preparing", "active"]
    event = AuditEvent.objects.filter(action="order.rental_state_changed").order_by("id").last()
    assert "nb-secret-123" not in str(event.after) + str(event.data)


def test_a_service_on_a_node_socket_gets_a_tunnel_to_that_socket_and_a_bad_path_is_refused():
    order = make_settled_order(offer=make_offer(units_total=1))
    operator = make_operator()
    make_ssh_key(order.owner)
    services.rental_prepare(order=order, actor=operator)
    for bad in ("notebook.sock", "/home/kd-abc/../root/x.sock", "/a b.sock", "/x;rm"):
        with pytest.raises(InvalidInput) as caught:
            deliver(order, operator, url="http://127.0.0.1:8888/lab", socket=bad)
        assert caught.value.field == "socket"
    order.refresh_from_db()
    assert order.rental_state == RentalState.PREPARING and not Delivery.objects.exists()

    sock = "/home/kd-abc/.kernodeck/run/notebook.sock"
    order = deliver(
        order, operator, url="http://127.0.0.1:8888/lab?token=t0k3n", token="t0k3n", socket=sock
    )

    assert Delivery.objects.get().remote_socket == sock
    access = selectors.access_for_owner(order=order)
    assert access.tunnel_command == f"ssh -N -L 8888:{sock} -p 2222 kd-abc@gpu1.example.org"


def test_delivery_is_refused_without_a_customer_ssh_key():
    order = make_settled_order(offer=make_offer(units_total=1))
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)

    with pytest.raises(Conflict, match="no SSH public key"):
        deliver(order, operator)
    order.refresh_from_db()
    assert order.rental_state == RentalState.PREPARING
    assert order.starts_at is None
    assert not Delivery.objects.exists()


def test_refund_of_a_failed_rental_credits_the_balance_once_and_frees_the_slots():
    offer = make_offer(units_total=2)
    order = make_settled_order(offer=offer, units=2)
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)
    services.rental_fail(order=order, reason="node does not boot", actor=operator)
    assert capacity.units_free(offer=offer) == 0  # failed keeps its slots for a retry

    order = services.rental_refund(order=order, reason="no hardware", actor=operator)

    assert order.rental_state == RentalState.ENDED
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("420.00")
    assert capacity.units_free(offer=offer) == 2
    with pytest.raises(Conflict):
        services.rental_refund(order=order, reason="again", actor=operator)
    assert ledger_selectors.balance_available(account=order.owner) == Decimal("420.00")


def test_retry_on_new_slots_requeues_and_reallocates():
    offer = make_offer(units_total=2)
    order = make_settled_order(offer=offer)
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)
    services.rental_fail(order=order, reason="bad GPU", actor=operator)
    node = offer.nodes.get()

    order = services.rental_retry(order=order, actor=operator, new_slots=True)

    assert order.rental_state == RentalState.QUEUED
    assert selectors.allocation_of(order) == [{"node": node.name, "slots": [1]}]


def test_suspend_and_resume_need_a_reason_and_keep_the_dates():
    clock.freeze(T0)
    order = make_settled_order(offer=make_offer(units_total=1))
    operator = make_operator()
    make_ssh_key(order.owner)
    services.rental_prepare(order=order, actor=operator)
    order = deliver(order, operator)
    with pytest.raises(InvalidInput):
        services.rental_suspend(order=order, reason="  ", actor=operator)

    order = services.rental_suspend(order=order, reason="abuse report", actor=operator)
    assert (order.rental_state, order.rental_reason) == ("suspended", "abuse report")
    order = services.rental_resume(order=order, reason="resolved", actor=operator)
    assert order.rental_state == RentalState.ACTIVE
    assert order.ends_at == T0 + timedelta(days=7)


def test_extend_moves_the_end_and_is_audited():
    clock.freeze(T0)
    order = make_settled_order(offer=make_offer(units_total=1))
    operator = make_operator()
    make_ssh_key(order.owner)
    services.rental_prepare(order=order, actor=operator)
    order = deliver(order, operator)
    until = T0 + timedelta(days=10)

    order = services.rental_extend(order=order, until=until, reason="ticket 4", actor=operator)

    assert order.ends_at == until
    event = AuditEvent.objects.get(action="order.rental_extended")
    assert event.after == {"ends_at": until.isoformat()}
    with pytest.raises(InvalidInput):
        services.rental_extend(order=order, until=T0, reason="back", actor=operator)
    order.refresh_from_db()
    assert order.ends_at == until


def _order_in(state, operator):
    """A rental brought to `state` through the services."""
    order = make_settled_order(offer=make_offer(units_total=1))
    make_ssh_key(order.owner)
    if state == RentalState.QUEUED:
        return order
    services.rental_prepare(order=order, actor=operator)
    if state == RentalState.PREPARING:
        return order
    if state == RentalState.PROVISIONING_FAILED:
        return services.rental_fail(order=order, reason="x", actor=operator)
    deliver(order, operator)
    if state == RentalState.SUSPENDED:
        return services.rental_suspend(order=order, reason="x", actor=operator)
    if state == RentalState.ENDED:
        return services.rental_end(order=order, reason="x", actor=operator)
    return Order.objects.get(pk=order.pk)


MOVES = {
    "prepare": (RentalState.PREPARING, lambda o, op: services.rental_prepare(order=o, actor=op)),
    "deliver": (RentalState.ACTIVE, lambda o, op: deliver(o, op)),
    "fail": (
        RentalState.PROVISIONING_FAILED,
        lambda o, op: services.rental_fail(order=o, reason="r", actor=op),
    ),
    "requeue": (
        RentalState.QUEUED,
        lambda o, op: services.rental_retry(order=o, actor=op, new_slots=True),
    ),
    "suspend": (
        RentalState.SUSPENDED,
        lambda o, op: services.rental_suspend(order=o, reason="r", actor=op),
    ),
    "resume": (
        RentalState.ACTIVE,
        lambda o, op: services.rental_resume(order=o, reason="r", actor=op),
    ),
    "end": (RentalState.ENDED, lambda o, op: services.rental_end(order=o, reason="r", actor=op)),
    "refund": (
        RentalState.ENDED,
        lambda o, op: services.rental_refund(order=o, reason="r", actor=op),
    ),
}
# Which service performs each allowed move, from each state.
SERVICE_FOR = {
    (RentalState.QUEUED, "prepare"),
    (RentalState.QUEUED, "fail"),
    (RentalState.QUEUED, "refund"),
    (RentalState.PREPARING, "deliver"),
    (RentalState.PREPARING, "fail"),
    (RentalState.ACTIVE, "suspend"),
    (RentalState.ACTIVE, "end"),
    (RentalState.SUSPENDED, "resume"),
    (RentalState.SUSPENDED, "end"),
    (RentalState.PROVISIONING_FAILED, "prepare"),
    (RentalState.PROVISIONING_FAILED, "requeue"),
    (RentalState.PROVISIONING_FAILED, "refund"),
}
STATES = [s for s in RentalState if s != RentalState.NOT_STARTED]


def test_the_services_cover_exactly_the_transition_table():
    declared = {(s, t) for s, targets in RENTAL_TRANSITIONS.items() for t in targets}
    covered = {(state, MOVES[move][0]) for state, move in SERVICE_FOR}
    assert covered == declared - {(RentalState.NOT_STARTED, RentalState.QUEUED)}


# Every (state, move) the table does not allow; a move to the state a rental is already
# in is a no-op (idempotent), not a refusal.
DISALLOWED = [
    (state, move)
    for state in STATES
    for move in sorted(MOVES)
    if (state, move) not in SERVICE_FOR and MOVES[move][0] != state
]


@pytest.mark.parametrize(("state", "move"), DISALLOWED)
def test_every_disallowed_move_is_refused_and_changes_nothing(state, move):
    operator = make_operator()
    order = _order_in(state, operator)
    before = Order.objects.filter(pk=order.pk).values().get()
    audit_count = AuditEvent.objects.count()
    allocations = list(Allocation.objects.filter(order=order).values())
    balance = ledger_selectors.balance_available(account=order.owner)

    with pytest.raises(Conflict):
        MOVES[move][1](order, operator)

    assert Order.objects.filter(pk=order.pk).values().get() == before
    assert AuditEvent.objects.count() == audit_count
    assert list(Allocation.objects.filter(order=order).values()) == allocations
    assert ledger_selectors.balance_available(account=order.owner) == balance
    assert Delivery.objects.filter(order=order).count() == (
        1 if state in {RentalState.ACTIVE, RentalState.SUSPENDED, RentalState.ENDED} else 0
    )
