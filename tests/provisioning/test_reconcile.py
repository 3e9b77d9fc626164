"""The reconcile (issue 20, items 1 and 4, and suspend on the node), on real SSH test
hosts: each node converges to what the database says — suspended accounts locked with no
processes and no devices, resumed ones back, the account's current keys and no others —
also when the node was unreachable at the moment of the change. The property test plays
random lifecycles with the node's link cut and mended between moves (few examples: each
move is real SSH work)."""

import contextlib
import time

import pytest
from huey.contrib.djhuey import HUEY
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from kernodeck.accounts import services as account_services
from kernodeck.accounts.models import SshKey
from kernodeck.core.errors import ServiceError
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import driving, node_health, selectors, services
from kernodeck.provisioning.drivers import driver_for
from kernodeck.provisioning.models import Allocation, NodeState
from tests.factories import make_offer, make_operator, make_order
from tests.provisioning import test_ssh_provisioning
from tests.provisioning.test_ssh_provisioning import (
    customer_with_key,
    login,
    run_task_retries,
    settle,
    ssh_node,
)
from tests.sshhosts import ssh_lab  # noqa: F401 (the module-scoped fixture)

pytestmark = pytest.mark.django_db(transaction=True)

lab = test_ssh_provisioning.lab


def active_rental(lab, host):
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    customer, key_path = customer_with_key(lab, "laptop")
    order = settle(make_order(owner=customer, offer=offer, units=1, preparation="python"))
    assert order.rental_state == RentalState.ACTIVE
    return node, customer, key_path, order, selectors.latest_delivery(order).user


def opens_gpu0(host, account, key_path):
    # access(2): may this account open the device (a stand-in answers ENXIO when read)?
    device = host.device_root / "dev" / "nvidia0"
    return login(host, account, key_path, f"test -r {device} -a -w {device} && echo open")


def test_suspend_locks_stops_and_revokes_on_the_node_and_resume_gives_it_back(lab):
    host = lab.hosts[0]
    node, _customer, key_path, order, account = active_rental(lab, host)
    # Something of the customer's runs on the node.
    started = login(host, account, key_path, "setsid sleep 600 >/dev/null 2>&1 < /dev/null &")
    assert started.returncode == 0 and opens_gpu0(host, account, key_path).stdout == "open\n"

    services.rental_suspend(order=order, reason="abuse report 3", actor=make_operator())
    refused = login(host, account, key_path, "true")
    assert refused.returncode == 255
    [entry] = driver_for("ssh").node_status(selectors.node_ref(node))
    assert (entry["suspended"], entry["locked"], entry["processes"]) == (True, True, 0)
    assert (host.device_root / "dev" / "nvidia0").stat().st_gid == 0
    assert driving.node_reconcile(node_id=node.pk) == []  # converged: nothing to do

    services.rental_resume(order=order, reason="cleared", actor=make_operator())
    assert opens_gpu0(host, account, key_path).stdout == "open\n"
    [entry] = driver_for("ssh").node_status(selectors.node_ref(node))
    assert (entry["suspended"], entry["locked"]) == (False, False)
    steps = [e.data["step"] for e in node_health.rental_steps(order)]
    assert "suspend" in steps and "resume" in steps


def test_a_suspension_while_the_link_is_cut_reaches_the_node_once_it_is_back(lab):
    host = lab.hosts[1]
    node, _customer, key_path, order, account = active_rental(lab, host)
    host.cut()
    services.rental_suspend(order=order, reason="abuse report 4", actor=make_operator())
    assert driving.nodes_reconcile() == 0  # still cut: nothing applied, nothing lost
    host.restore()
    assert login(host, account, key_path, "true").returncode == 0  # not yet reconciled
    driving.nodes_reconcile()
    assert login(host, account, key_path, "true").returncode == 255
    node.refresh_from_db()


def test_keys_added_and_deleted_on_the_account_reach_the_live_rental_in_one_reconcile(lab):
    host = lab.hosts[0]
    node, customer, old_key_path, order, account = active_rental(lab, host)
    new_key_path, public = lab.make_key(f"desktop-{time.monotonic_ns()}")
    account_services.ssh_key_add(user=customer, public_key=public, name="desktop")
    old = SshKey.objects.get(user=customer, name="laptop")
    account_services.ssh_key_remove(user=customer, key_id=old.pk)
    assert login(host, account, old_key_path, "true").returncode == 0  # before the reconcile

    applied = driving.node_reconcile(node_id=node.pk)
    assert (order.reference, "keys") in applied
    assert login(host, account, new_key_path, "true").returncode == 0
    assert login(host, account, old_key_path, "true").returncode == 255
    assert (order.reference, "keys") not in driving.node_reconcile(node_id=node.pk)


# -- the property: random lifecycles with the node going down and up between moves -------

MOVES = st.lists(
    st.tuples(
        st.sampled_from(["order", "end", "suspend", "resume", "refund", "cut", "mend", "tick"]),
        st.integers(min_value=0, max_value=3),
    ),
    min_size=3,
    max_size=6,
)


def _tick():
    """The worker's minute: due retries, pending releases, lost steps, the reconcile."""
    run_task_retries()
    driving.rentals_release_sweep()
    driving.steps_lost_sweep()
    driving.nodes_reconcile()


def _node_holds_no_slot_twice_nor_one_the_database_freed(node):
    """On the node: no GPU is held by two accounts, and each account's GPUs are slots its
    rental still holds in the database (a freed slot is one the node gave back)."""
    held = {}
    for order_id, index in Allocation.objects.filter(
        slot__node=node, released_at__isnull=True
    ).values_list("order__reference", "slot__index"):
        held.setdefault(order_id, set()).add(index)
    assert all(len(v) for v in held.values())
    seen = set()
    for entry in driver_for("ssh").node_status(selectors.node_ref(node)):
        if entry["status"] != "active":
            continue
        gpus = set(entry["gpus"])
        assert not gpus & seen, f"GPU held twice on the node: {entry}"
        seen |= gpus
        assert gpus <= held.get(entry["reference"], set()), (entry, held)


@hypothesis_settings(
    max_examples=3,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(moves=MOVES)
def test_random_lifecycles_with_node_faults_never_share_a_slot_and_converge(lab, moves):
    """Orders, ends, refunds, suspensions and resumptions in any order, the node's link cut
    and mended between them: no slot is ever held by two rentals on the node, no released
    rental's account logs in once the node is back, and the node converges to the
    database."""
    HUEY.flush()
    lab.reset()
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    customer, key_path = customer_with_key(lab, "laptop")
    operator = make_operator()
    orders, down = [], False
    for move, pick in moves:
        target = Order.objects.get(pk=orders[pick % len(orders)].pk) if orders else None
        try:
            if move == "order":
                order = make_order(
                    owner=customer, offer=offer, units=1 + pick % 2, preparation="python"
                )
                orders.append(order)
                settle(order)
            elif move == "cut" and not down:
                host.cut()
                down = True
            elif move == "mend" and down:
                host.restore()
                down = False
            elif move == "tick":
                _tick()
            elif target is not None and move == "end":
                services.rental_end(order=target, reason="moved", actor=operator)
            elif target is not None and move == "suspend":
                services.rental_suspend(order=target, reason="moved", actor=operator)
            elif target is not None and move == "resume":
                services.rental_resume(order=target, reason="moved", actor=operator)
            elif target is not None and move == "refund":
                services.rental_refund(order=target, reason="moved", actor=operator)
        except ServiceError:
            pass  # a move the rental's state refuses (or no free unit): refused, no change
        if not down:
            _node_holds_no_slot_twice_nor_one_the_database_freed(node)

    # The node is mended and back in service; a few minutes of worker later...
    if down:
        host.restore()
    node.refresh_from_db()
    if node.state != NodeState.AVAILABLE:
        services.node_state_set(node=node, state="available", reason="mended", actor=operator)
    _tick()
    _tick()
    _node_holds_no_slot_twice_nor_one_the_database_freed(node)
    status = {e["reference"]: e for e in driver_for("ssh").node_status(selectors.node_ref(node))}
    for order in Order.objects.filter(pk__in=[o.pk for o in orders]):
        held = Allocation.objects.filter(order=order, released_at__isnull=True).count()
        delivery = selectors.latest_delivery(order)
        entry = status.get(order.reference)
        assert order.rental_state not in {RentalState.PREPARING, RentalState.QUEUED}
        if order.rental_state == RentalState.ENDED:
            assert held == 0  # the node confirmed the release
            assert entry is None or entry["status"] != "active" or entry["locked"]
        elif order.rental_state in {RentalState.ACTIVE, RentalState.SUSPENDED}:
            suspended = order.rental_state == RentalState.SUSPENDED
            assert (entry["status"], entry["suspended"]) == ("active", suspended), entry
            assert len(entry["gpus"]) == held == order.units
        if delivery is not None:
            answer = login(host, delivery.user, key_path, "true")
            assert (answer.returncode == 0) is (order.rental_state == RentalState.ACTIVE)

    # Leave the host and the database clean for the next example: everything ends.
    for order in Order.objects.filter(pk__in=[o.pk for o in orders]):
        with contextlib.suppress(ServiceError):
            if order.rental_state == RentalState.PROVISIONING_FAILED:
                services.rental_refund(order=order, reason="done", actor=operator)
            elif order.rental_state in {RentalState.ACTIVE, RentalState.SUSPENDED}:
                services.rental_end(order=order, reason="done", actor=operator)
    _tick()
    assert not Allocation.objects.filter(slot__node=node, released_at__isnull=True).exists()
    services.node_state_set(node=node, state="retired", reason="example over", actor=operator)
