"""The ssh driver end to end, on real SSH servers (tests/sshhosts.py) with the real agent.

A paid order is allocated, prepared and delivered with no operator action; the customer's
Ed25519 key logs in with the `ssh` client as the rental account and sees only its GPUs; a
`notebook` preparation answers through `ssh -L`; extension and the end reach the host. The
failures: a node whose link is cut, a changed host key, the same step run twice, two rentals
on one node. JupyterLab is not installed on the test hosts: the node's `notebook` recipe
starts a small stdlib HTTP server that demands the token, exactly like an operator-defined
recipe would start JupyterLab.
"""

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from django.core import mail
from django.db import transaction

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.core.models import AuditEvent
from kernodeck.orders import capacity
from kernodeck.orders.models import RentalState
from kernodeck.provisioning import driving, node_health, selectors, services
from kernodeck.provisioning.drivers import driver_for
from kernodeck.provisioning.drivers.base import DriverError
from kernodeck.provisioning.drivers.ssh import AGENT_NAME, agent_sha256, fingerprint
from kernodeck.provisioning.models import Allocation, Delivery, Node, NodeState
from kernodeck.settlement import orders as settlement_orders
from tests.factories import PASSWORD, make_offer, make_operator, make_order, make_user
from tests.sshhosts import ssh_lab  # noqa: F401 (the module-scoped fixture)

pytestmark = pytest.mark.django_db(transaction=True)

# Started by the node's notebook recipe: answers 200 with the right token, 403 without.
NOTEBOOK_STANDIN = r"""
cat > "$HOME/standin_notebook.py" <<'PY'
import http.server, sys, urllib.parse
port, token = int(sys.argv[1]), sys.argv[2]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        ok = query.get("token") == [token]
        self.send_response(200 if ok else 403)
        self.end_headers()
        self.wfile.write(b"notebook stand-in" if ok else b"token required")
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
setsid python3 "$HOME/standin_notebook.py" "$KD_PORT" "$KD_TOKEN" > /dev/null 2>&1 < /dev/null &
"""


@pytest.fixture
def lab(ssh_lab, settings):  # noqa: F811
    settings.KERNODECK_SSH_KEY_FILE = str(ssh_lab.operator_key_path)
    settings.KERNODECK_SSH_CONNECT_TIMEOUT = 5
    settings.KERNODECK_SSH_COMMAND_TIMEOUT = 30
    settings.KERNODECK_SSH_PREPARE_TIMEOUT = 60
    settings.ADMINS = [("Ops", "ops@kernodeck.test")]
    from huey.contrib.djhuey import HUEY

    HUEY.flush()  # retries other tests left scheduled are not this test's
    ssh_lab.reset()
    yield ssh_lab
    ssh_lab.reset()


def ssh_node(offer, host, *, pinned=True, **fields):
    node = services.node_create(
        name=f"{offer.slug}-{host.name}",
        offer=offer,
        gpu_count=host.gpu_count,
        host=host.address,
        port=host.port,
        driver="ssh",
        admin_user="root",
    )
    if pinned:  # as if accepted and inspected: in service (a new ssh node waits for that)
        in_service = {"commissioned_at": clock.now(), "state": "available", "state_reason": ""}
        fields = in_service | fields
    Node.objects.filter(pk=node.pk).update(
        host_key=host.host_public_key() if pinned else "",
        agent_dir=host.agent_dir,
        # A venv without pip: a real recipe run as the account, quick enough for tests.
        recipes={
            "notebook": NOTEBOOK_STANDIN,
            "python": 'set -e\npython3 -m venv --without-pip "$KD_WORKSPACE/venv"\n',
        },
        **fields,
    )
    node.refresh_from_db()
    return node


def customer_with_key(lab, name):
    from kernodeck.accounts import services as account_services

    user = make_user()
    key_path, public = lab.make_key(f"{name}-{time.monotonic_ns()}")
    account_services.ssh_key_add(user=user, public_key=public, name=name)
    return user, key_path


def settle(order):
    settlement_orders.order_settle(order=order, cause={"test": "settled"})
    order.refresh_from_db()
    return order


def run_task_retries():
    """Run what huey scheduled for later (its retries) as the consumer would when due;
    returns the wait before each retry, in seconds."""
    from huey.contrib.djhuey import HUEY

    waits = []
    for _ in range(10):
        # huey keeps naive UTC times; one day ahead takes every retry now.
        now = datetime.now(UTC).replace(tzinfo=None)
        due = HUEY.read_schedule(now + timedelta(days=1))
        if not due:
            return waits
        for task in due:
            if task.name.endswith("rental_prepare_task"):
                waits.append(round((task.eta - now).total_seconds() / 60) * 60)
            HUEY.execute(task, timestamp=now + timedelta(days=1))
    return waits


def login(host, user, key_path, command):
    return subprocess.run(
        [*host.ssh_argv(user, key_path), command], capture_output=True, text=True, timeout=30
    )


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_paid_order_is_delivered_used_over_ssh_extended_and_ended_with_no_operator(lab):
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    customer, key_path = customer_with_key(lab, "laptop")
    order = settle(make_order(owner=customer, offer=offer, units=2, preparation="notebook"))

    # Settlement → allocation → prepare → deliver, all from the task queue.
    assert order.rental_state == RentalState.ACTIVE
    assert selectors.allocation_of(order) == [{"node": node.name, "slots": [0, 1]}]
    delivery = Delivery.objects.get(order=order)
    account = lab.account_prefix + order.reference.lower().replace("kd-", "").replace("-", "")
    assert (delivery.host, delivery.port, delivery.user, delivery.created_by) == (
        host.address,
        host.port,
        account,
        None,
    )
    assert order.starts_at == delivery.created_at
    assert order.ends_at == order.starts_at + timedelta(days=7)
    access = selectors.access_for_owner(order=order)
    assert access.url.startswith("http://127.0.0.1:") and access.token in access.url

    # The customer's Ed25519 key logs in as the rental account and sees only its GPUs.
    devices = " ".join(str(host.device_root / "dev" / f"nvidia{i}") for i in range(4))
    probe = login(
        host,
        account,
        key_path,
        f'echo "gpus=$CUDA_VISIBLE_DEVICES"; id -un; '
        f'for d in {devices}; do if {host.opener} "$d"; then echo "open $d"; '
        f'else echo "denied $d"; fi; done',
    )
    assert probe.returncode == 0, probe.stderr
    lines = probe.stdout.splitlines()
    assert lines[0] == "gpus=0,1"
    assert lines[1] == account
    assert [line.split()[0] for line in lines[2:]] == ["open", "open", "denied", "denied"]

    # The notebook answers through an SSH tunnel, with its token only.
    port = int(access.url.split(":")[2].split("/")[0])
    local = free_port()
    tunnel = subprocess.Popen(
        [
            *host.ssh_argv(account, key_path, "-N", "-L", f"{local}:127.0.0.1:{port}"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 15
        status = None
        while time.monotonic() < deadline:
            try:
                status, body = http_get(f"http://127.0.0.1:{local}/lab?token={access.token}")
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        assert (status, body) == (200, "notebook stand-in")
        assert http_get(f"http://127.0.0.1:{local}/lab")[0] == 403
    finally:
        tunnel.terminate()
        tunnel.wait(timeout=10)

    # The same steps again (a retried task) change nothing: one account, one key set, same
    # token.
    spec = selectors.rental_spec(order=order)
    driver = driver_for("ssh")
    driver.prepare(spec)
    assert driver.deliver(spec).token == access.token
    assert [e.pw_name for e in lab.accounts()] == [account]
    keys = (host.home_base / account / ".ssh" / "authorized_keys").read_text().splitlines()
    assert keys == list(spec.ssh_public_keys)

    # Support's extension moves the end on the host too.
    operator = make_operator()
    until = order.ends_at + timedelta(days=3)
    services.rental_extend(order=order, until=until, reason="ticket 12", actor=operator)
    with driver.session(selectors.node_ref(node)) as session:
        status = session.agent("status", {"reference": order.reference})
    assert status["until"] == until.isoformat()
    assert status["services"] == {"notebook": True}
    uid = host.account(account).pw_uid

    # At the end: no operator; the login is refused, nothing of the account runs, slots free.
    clock.freeze(until + timedelta(minutes=1))
    assert services.rentals_end_due() == [order.reference]
    order.refresh_from_db()
    assert order.rental_state == RentalState.ENDED
    refused = login(host, account, key_path, "true")
    assert refused.returncode == 255
    assert "Permission denied" in refused.stderr
    assert lab.accounts() == []
    assert not [p for p in _uids_running() if p == uid]
    assert not Allocation.objects.filter(order=order, released_at__isnull=True).exists()
    assert capacity.units_free(offer=offer) == 4
    assert all((host.device_root / "dev" / f"nvidia{i}").stat().st_gid == 0 for i in range(4))
    # Each driver step is kept for the desk, with the agent's words.
    steps = node_health.rental_steps(order)
    assert [e.data["step"] for e in steps] == ["prepare", "extend", "release"]
    assert (
        steps[0]
        .data["detail"]
        .startswith(f"{node.name}: account {account}, GPUs 0,1, notebook done")
    )
    assert steps[2].data["detail"] == f"{node.name}: wiped"


def _uids_running():
    import os

    uids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                uids.append(os.stat(f"/proc/{name}").st_uid)
            except OSError:
                continue
    return uids


def test_a_node_that_is_down_fails_the_rental_with_the_reason_and_a_retry_uses_the_other(
    lab, client, settings
):
    down, up = lab.hosts
    offer = make_offer(units_total=0)
    first = ssh_node(offer, down)
    second = ssh_node(offer, up)
    customer, key_path = customer_with_key(lab, "laptop")
    order = make_order(owner=customer, offer=offer, units=1, preparation="python")
    down.cut()

    order = settle(order)
    assert order.rental_state == RentalState.PREPARING  # the task queue retries later
    assert selectors.allocation_of(order)[0]["node"] == first.name
    assert run_task_retries() == [60, 120, 240]  # backoff, then the last attempt fails

    order.refresh_from_db()
    assert order.rental_state == RentalState.PROVISIONING_FAILED
    assert order.rental_reason == str(services.MACHINE_FAILED)  # customer words
    assert (
        node_health.rental_steps(order)[-1]
        .data["detail"]
        .startswith(f"The node {first.name} is unreachable")
    )
    first.refresh_from_db()
    assert first.state == NodeState.MAINTENANCE
    assert first.state_reason.startswith("Unreachable: The node")
    assert first.health["ok"] is False

    # The desk shows each step with the node's words, and proposes the refund once the
    # configured attempts are spent.
    operator = make_operator()
    assert client.login(email=operator.email, password=PASSWORD)
    settings.KERNODECK_PROVISIONING_MAX_ATTEMPTS = 1
    desk = client.get(f"/backoffice/rentals/{order.reference}/").content.decode()
    assert "Provisioning failed 1 time: refund it rather than retry again." in desk
    assert f"The node {first.name} is unreachable" in desk
    assert node_health.rental_refund_proposed(order) is True
    settings.KERNODECK_PROVISIONING_MAX_ATTEMPTS = 3
    assert node_health.rental_refund_proposed(order) is False

    services.rental_retry(order=order, actor=operator, new_slots=True)
    order.refresh_from_db()
    assert order.rental_state == RentalState.ACTIVE
    assert selectors.allocation_of(order) == [{"node": second.name, "slots": [0]}]
    user = Delivery.objects.get(order=order).user
    assert login(up, user, key_path, "echo $CUDA_VISIBLE_DEVICES").stdout == "0\n"
    assert node_health.rental_failed_attempts(order) == 1


def test_a_changed_host_key_stops_every_operation_and_alerts(lab):
    host = lab.hosts[1]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    pinned = node.host_key
    host.rotate_host_key()
    customer, _key = customer_with_key(lab, "laptop")

    order = settle(make_order(owner=customer, offer=offer, preparation="python"))

    assert order.rental_state == RentalState.PROVISIONING_FAILED
    assert order.rental_reason == str(services.MACHINE_FAILED)
    assert (
        node_health.rental_steps(order)[-1]
        .data["detail"]
        .startswith(f"The SSH host key of {node.name} changed")
    )
    assert lab.accounts() == []  # nothing was sent to the impostor
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE
    assert node.state_reason.startswith("Host key changed: ")
    assert node.host_key == pinned
    assert node.host_key_offered == host.host_public_key()
    assert AuditEvent.objects.filter(action="provisioning.node_host_key_changed").count() == 1
    alerts = [m for m in mail.outbox if "host key" in m.subject.lower()]
    assert [(m.subject, m.to) for m in alerts] == [
        (f"[Kernodeck] {node.name}: Host key changed", ["ops@kernodeck.test"])
    ]
    from kernodeck.provisioning import alerts as node_alerts

    [alert] = node_alerts.alerts_open().filter(kind="host_key_changed")
    assert alert.node_id == node.pk
    assert "accept the new key" in alert.action

    # The periodic inspection agrees and alerts no second time.
    health = driver_for("ssh").inspect(selectors.node_ref(node))
    services.node_health_record(node=node, health=health)
    assert health.ok is False and health.data["problem"] == "host_key_changed"
    assert len([m for m in mail.outbox if "host key" in m.subject.lower()]) == 1

    # An operator who checked the machine accepts the key they saw; then it works again.
    operator = make_operator()
    with pytest.raises(Conflict):
        node_health.node_host_key_accept(node=node, offered=pinned, actor=operator)
    node_health.node_host_key_accept(node=node, offered=host.host_public_key(), actor=operator)
    node.refresh_from_db()
    assert (node.host_key, node.host_key_offered) == (host.host_public_key(), "")
    # The alert cleared with the acceptance.
    assert not node_alerts.alerts_open().filter(kind="host_key_changed").exists()
    health = driver_for("ssh").inspect(selectors.node_ref(node))
    assert (health.ok, health.gpus_seen) == (True, 4)


def test_a_new_node_shows_its_fingerprint_until_accepted_and_a_lost_gpu_takes_it_out(lab):
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host, pinned=False)

    assert driving.nodes_inspect() == 1
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE
    assert node.host_key_offered == host.host_public_key()
    assert fingerprint(node.host_key_offered) in node.state_reason
    assert not (host.base / "agent" / AGENT_NAME).exists()  # nothing sent yet

    # Not sellable yet: neither accepted nor inspected, and an operator cannot force it.
    assert capacity.units_free(offer=offer) == 0
    operator = make_operator()
    with pytest.raises(Conflict):
        services.node_state_set(node=node, state="available", reason="now", actor=operator)
    node_health.node_host_key_accept(node=node, offered=node.host_key_offered, actor=operator)
    node.refresh_from_db()
    assert (node.state, capacity.units_free(offer=offer)) == ("maintenance", 0)
    with pytest.raises(Conflict):  # accepted, but not inspected yet
        services.node_state_set(node=node, state="available", reason="now", actor=operator)
    # The first successful inspection puts it in service by itself.
    assert driving.nodes_inspect() == 1
    node.refresh_from_db()
    assert (node.state, node.health["ok"], node.health["gpus_seen"]) == ("available", True, 4)
    assert node.commissioned_at is not None
    assert capacity.units_free(offer=offer) == 4
    assert node.health["backend"] == "cuda"
    copied = (host.base / "agent" / AGENT_NAME).read_bytes()
    assert __import__("hashlib").sha256(copied).hexdigest() == agent_sha256()

    host.set_gpus(3)
    driving.nodes_inspect()
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE
    assert node.state_reason == (
        "GPU count mismatch: The node reports 3 GPUs; 4 slots are registered."
    )
    assert capacity.units_free(offer=offer) == 0


def test_two_rentals_on_one_node_never_see_each_others_gpus_or_files(lab):
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    ssh_node(offer, host)
    alice, alice_key = customer_with_key(lab, "alice")
    bob, bob_key = customer_with_key(lab, "bob")
    first = settle(make_order(owner=alice, offer=offer, units=2, preparation="python"))
    second = settle(make_order(owner=bob, offer=offer, units=2, preparation="python"))
    assert (first.rental_state, second.rental_state) == (RentalState.ACTIVE, RentalState.ACTIVE)
    a_user = Delivery.objects.get(order=first).user
    b_user = Delivery.objects.get(order=second).user
    dev = host.device_root / "dev"

    def probe(user, key, other):
        return login(
            host,
            user,
            key,
            f"echo $CUDA_VISIBLE_DEVICES; echo secret > ~/workspace/mine; "
            f"for i in 0 1 2 3; do {host.opener} {dev}/nvidia$i && echo $i; done; "
            f"ls {host.home_base / other} >/dev/null 2>&1 && echo 'sees other' || echo 'walled'",
        ).stdout.split()

    assert probe(a_user, alice_key, b_user) == ["0,1", "0", "1", "walled"]
    assert probe(b_user, bob_key, a_user) == ["2,3", "2", "3", "walled"]
    # Bob's key does not open Alice's account.
    assert login(host, a_user, bob_key, "true").returncode == 255
    assert json.loads((host.state_dir / "rentals" / f"{a_user}.json").read_text())["gpus"] == [
        0,
        1,
    ]


def test_a_slow_or_flooding_node_is_cut_off_with_a_clear_error(lab, settings):
    host = lab.hosts[1]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    with driver_for("ssh").session(selectors.node_ref(node)) as session:
        with pytest.raises(DriverError) as slow:
            session.exec("sleep 10", timeout=1)
        assert slow.value.message == f"The node {node.name} did not answer within 1 s."
        assert slow.value.retryable is True
    with driver_for("ssh").session(selectors.node_ref(node)) as session:
        with pytest.raises(DriverError) as flood:
            session.exec("head -c 3000000 /dev/zero", timeout=20)
        assert flood.value.message == f"The node {node.name} answered too much."
    settings.KERNODECK_SSH_KEY_FILE = str(lab.base / "missing-key")
    with pytest.raises(DriverError) as keyless:
        driver_for("ssh").session(selectors.node_ref(node)).__enter__()
    assert keyless.value.message.startswith("The SSH key in KERNODECK_SSH_KEY_FILE cannot be read")
    assert keyless.value.retryable is False


def test_the_driver_refuses_to_run_inside_a_transaction(lab):
    offer = make_offer(units_total=0)
    node = ssh_node(offer, lab.hosts[0])
    with transaction.atomic(), pytest.raises(RuntimeError, match="inside a database transaction"):
        driver_for("ssh").inspect(selectors.node_ref(node))


def test_inspect_now_from_the_node_page_records_the_health_and_shows_the_steps(lab, client):
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    operator = make_operator()
    assert client.login(email=operator.email, password=PASSWORD)

    response = client.post(f"/backoffice/nodes/{node.name}/", {"action": "inspect"})

    assert response.status_code == 302
    node.refresh_from_db()
    assert (node.health["ok"], node.health["gpus_seen"]) == (True, 4)
    page = client.get(f"/backoffice/nodes/{node.name}/").content.decode()
    assert "4 GPUs seen." in page
    assert "570.133.20" in page
