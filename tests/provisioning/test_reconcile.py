"""The reconcile (issue 20, items 1 and 4, and suspend on the node), on real SSH test
hosts: each node converges to what the database says — suspended accounts locked with no
processes and no devices, resumed ones back, the account's current keys and no others —
also when the node was unreachable at the moment of the change."""

import time

import pytest

from kernodeck.accounts import services as account_services
from kernodeck.accounts.models import SshKey
from kernodeck.orders.models import RentalState
from kernodeck.provisioning import driving, node_health, selectors, services
from kernodeck.provisioning.drivers import driver_for
from tests.factories import make_offer, make_operator, make_order
from tests.provisioning import test_ssh_provisioning
from tests.provisioning.test_ssh_provisioning import customer_with_key, login, settle, ssh_node
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
