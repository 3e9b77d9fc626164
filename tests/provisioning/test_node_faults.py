"""Nodes earn their place (issue 20, item 6), on real SSH test hosts: an agent refusal
that blames the machine (a garbage `nvidia-smi`) takes the node out at the first refused
step, with the reason, and another node takes the rental when one can; the customer reads
customer words, the desk the node's."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import connection

from kernodeck.core import clock
from kernodeck.orders import capacity
from kernodeck.orders.models import RentalState
from kernodeck.provisioning import driving, node_health, selectors, services
from kernodeck.provisioning.models import Node, NodeState, StepLease
from tests.factories import make_offer, make_order
from tests.provisioning import test_ssh_provisioning
from tests.provisioning.test_ssh_provisioning import customer_with_key, login, settle, ssh_node
from tests.sshhosts import ssh_lab  # noqa: F401 (the module-scoped fixture)

pytestmark = pytest.mark.django_db(transaction=True)

lab = test_ssh_provisioning.lab

GARBAGE_NVIDIA_SMI = "#!/bin/sh\nprintf 'NVIDIA-SMI has failed \\033[31m!!\\n'\nexit 0\n"


def garbage_nvidia_smi(host):
    """This module's test-host hook: the node's nvidia-smi prints nonsense (reset() by the
    lab does not restore it, so the test puts the stand-in back)."""
    path = host.base / "tools" / "nvidia-smi"
    original = path.read_text()
    path.write_text(GARBAGE_NVIDIA_SMI)
    return lambda: path.write_text(original)


def test_a_garbage_nvidia_smi_takes_the_node_out_on_the_first_refused_step(lab):
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    assert capacity.units_free(offer=offer) == host.gpu_count
    customer, _key = customer_with_key(lab, "laptop")
    order = make_order(owner=customer, offer=offer, units=1, preparation="python")
    restore = garbage_nvidia_smi(host)
    try:
        order = settle(order)
    finally:
        restore()

    # No other node can take it: it stays failed on the desk, holding its slot.
    assert order.rental_state == RentalState.PROVISIONING_FAILED
    assert len(selectors.allocation_of(order)) == 1
    assert order.rental_reason == str(services.MACHINE_FAILED)
    assert node.name not in order.rental_reason
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE  # at once, not at the next inspection
    assert node.state_reason.startswith("The node refused a step: ")
    assert "nvidia-smi" in node.state_reason
    assert capacity.units_free(offer=offer) == 0
    step = node_health.rental_steps(order)[-1]
    assert "nvidia-smi" in step.data["detail"]


def test_a_rental_refused_by_a_broken_node_is_taken_up_by_another_node_at_once(lab):
    """Item 6: the refused step takes the node out, and the rental moves to the healthy
    node without an operator; the broken node's slots are never sold meanwhile."""
    broken, healthy = lab.hosts
    offer = make_offer(units_total=0)
    first = ssh_node(offer, broken)  # the first node takes a one-unit order (ties by id)
    second = ssh_node(offer, healthy)
    customer, key_path = customer_with_key(lab, "laptop")
    order = make_order(owner=customer, offer=offer, units=1, preparation="python")
    undo = own_account_prefix(lab, healthy)
    restore = garbage_nvidia_smi(broken)
    try:
        order = settle(order)
        steps = [e.data["detail"][:200] for e in node_health.rental_steps(order)]
        assert order.rental_state == RentalState.ACTIVE, steps
        assert "nvidia-smi" in steps[0]  # the refusal on the broken node, kept for the desk
        assert [a["node"] for a in selectors.allocation_of(order)] == [second.name]
        first.refresh_from_db()
        assert first.state == NodeState.MAINTENANCE
        assert node_health.rental_failed_attempts(order) == 1
        probe = login(healthy, selectors.latest_delivery(order).user, key_path, "true")
        assert probe.returncode == 0, probe.stderr
        # Only the healthy node's three other GPUs are for sale; the broken one's are not.
        assert capacity.units_free(offer=offer) == healthy.gpu_count - 1
    finally:
        restore()
        undo()


# The worker: a process of its own, settling the order as the settlement task would; the
# automated node's preparation then runs in it (the task queue runs tasks at once in tests).
WORKER = """
import sys
import django
django.setup()
from kernodeck.orders.models import Order
from kernodeck.settlement import orders as settlement_orders
settlement_orders.order_settle(order=Order.objects.get(pk=int(sys.argv[1])), cause={"w": 1})
"""
# A preparation of a few seconds: its worker is killed while it runs; the node finishes it
# on its own (the agent does not need the worker to stay connected).
SLOW_RECIPE = (
    'set -e\ntouch "$KD_WORKSPACE/.kd-started"\nsleep 3\n'
    'python3 -m venv --without-pip "$KD_WORKSPACE/venv"\n'
)


def test_a_worker_killed_during_a_preparation_is_taken_up_without_an_operator(lab, settings):
    """Item 3: a worker SIGKILLed in the middle of the node's preparation leaves its lease
    to expire; the minute sweep asks the node again and the rental becomes active."""
    if connection.vendor != "postgresql":
        pytest.skip("a second worker process shares the database only on PostgreSQL")
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    Node.objects.filter(pk=node.pk).update(recipes={"python": SLOW_RECIPE})
    customer, key_path = customer_with_key(lab, "laptop")
    order = make_order(owner=customer, offer=offer, units=1, preparation="python")
    db = connection.settings_dict
    env = os.environ | {
        "DJANGO_SETTINGS_MODULE": "config.test_settings",
        "PYTHONPATH": os.getcwd(),
        "KERNODECK_DATABASE_URL": (
            f"postgres://{db['USER']}:{db['PASSWORD'] or ''}@{db['HOST']}:{db['PORT']}"
            f"/{db['NAME']}"
        ),
        "KERNODECK_SSH_KEY_FILE": str(lab.operator_key_path),
        "KERNODECK_SSH_CONNECT_TIMEOUT": "5",
        "KERNODECK_SSH_COMMAND_TIMEOUT": "30",
        "KERNODECK_SSH_PREPARE_TIMEOUT": "120",
    }
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(order.pk)], env=env, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not list(host.home_base.glob("*/workspace/.kd-started")):
            assert worker.poll() is None, "the worker ended before the node began"
            assert time.monotonic() < deadline, "the preparation never began"
            time.sleep(0.1)
        lease = StepLease.objects.get(order=order)
        assert lease.holder.split(":")[1] == str(worker.pid)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=10)
    assert worker.returncode == -signal.SIGKILL
    order.refresh_from_db()
    assert order.rental_state == RentalState.PREPARING  # the dead worker's step, in flight

    assert driving.steps_lost_sweep() == 0  # its lease still holds: nobody steps in yet
    # The lease outlasts the node's own time limit for the step: by the time it expires the
    # node has finished (or given up) on its own. Wait for that here, then let it expire.
    deadline = time.monotonic() + 60
    while not list(host.home_base.glob("*/workspace/venv/bin/python")):
        assert time.monotonic() < deadline, "the node never finished the preparation"
        time.sleep(0.2)
    clock.freeze(lease.until + timedelta(seconds=1))
    assert driving.steps_lost_sweep() == 1
    order.refresh_from_db()
    steps = [e.data["detail"][:200] for e in node_health.rental_steps(order)]
    assert order.rental_state == RentalState.ACTIVE, steps
    assert not StepLease.objects.filter(order=order).exists()
    probe = login(host, selectors.latest_delivery(order).user, key_path, "true")
    assert probe.returncode == 0, probe.stderr


def own_account_prefix(lab, host):
    """Where the lab's hosts share the machine's account database (loopback hosts; a real
    fleet's machines, and isolated test hosts with their own /etc, do not), the second host
    gets a prefix of its own for the test; returns the undo (restore its agent settings,
    remove its accounts)."""
    import json
    import pwd
    import subprocess

    if lab.isolate:
        return lambda: None
    path = host.base / "agent" / "agent.json"
    original = path.read_text()
    config = json.loads(original)
    prefix = lab.account_prefix[:-1] + "y-"
    path.write_text(json.dumps(config | {"prefix": prefix}))

    def undo():
        path.write_text(original)
        for entry in pwd.getpwall():
            if entry.pw_name.startswith(prefix):
                subprocess.run(["pkill", "-KILL", "-u", entry.pw_name], check=False)
                subprocess.run(["userdel", entry.pw_name], check=False)
                subprocess.run(["groupdel", entry.pw_name], check=False)

    return undo


def test_a_two_node_rental_lists_both_nodes_in_its_access_and_both_logins_work(lab, client):
    from kernodeck.orders.api import access_out
    from kernodeck.provisioning import selectors
    from kernodeck.provisioning.drivers import driver_for
    from tests.factories import PASSWORD
    from tests.provisioning.test_ssh_provisioning import login

    first, second = lab.hosts
    offer = make_offer(units_total=0)
    nodes = [ssh_node(offer, first), ssh_node(offer, second)]
    customer, key_path = customer_with_key(lab, "laptop")
    units = first.gpu_count + 1  # more than one node holds: both
    undo = own_account_prefix(lab, second)
    try:
        order = settle(make_order(owner=customer, offer=offer, units=units, preparation="python"))
        steps = [e.data["detail"][:300] for e in node_health.rental_steps(order)]
        assert order.rental_state == RentalState.ACTIVE, steps

        access = selectors.access_for_owner(order=order)
        assert [(n.host, n.port, n.gpus) for n in access.nodes] == [
            (first.address, first.port, tuple(range(first.gpu_count))),
            (second.address, second.port, (0,)),
        ]
        assert (access.host, access.port) == (first.address, first.port)  # one-node fields
        assert access.nodes[1].ssh_command.endswith(f"@{second.address}")
        # Both logins work with the customer's key and see that node's GPUs.
        [on_second] = driver_for("ssh").node_status(selectors.node_ref(nodes[1]))
        users = [access.nodes[0].user, on_second["account"]]
        for host, user, entry in zip((first, second), users, access.nodes, strict=True):
            probe = login(host, user, key_path, "echo $CUDA_VISIBLE_DEVICES")
            assert probe.returncode == 0, probe.stderr
            assert probe.stdout.strip() == ",".join(str(i) for i in entry.gpus)

        body = access_out(access)  # what GET /api/v1/orders/{reference} answers as access
        assert [n["host"] for n in body["nodes"]] == [first.address, second.address]
        assert body["nodes"][1]["gpus"] == [0]
        assert body["host"] == first.address
        assert client.login(email=customer.email, password=PASSWORD)
        page = client.get(f"/orders/{order.reference}/").content.decode()
        assert access.nodes[1].ssh_command in page
    finally:
        undo()
