"""Rehearse automated provisioning over SSH on this machine, with no operator action.

    sudo .venv/bin/python scripts/ssh_rehearsal.py

As root, it starts two SSH test hosts in their own network namespaces (the same hosts the
tests use: tests/sshhosts.py), a throwaway SQLite database, and then walks a paid order
through the `ssh` driver: the new node's host key is shown and accepted, the order is
settled, the task queue allocates, prepares and delivers it, the customer logs in with the
`ssh` client, the rental is extended, the clock is moved past the end, and the end is
checked (login refused, slots free). Every step prints what happened. The hosts, their
accounts and the database are removed at the end, also after a failure.
"""

import os
import subprocess
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def say(text):
    print(f"== {text}", flush=True)


def main():
    from tests.sshhosts import SshLab, ssh_lab_unavailable

    reason = ssh_lab_unavailable()
    if reason:
        sys.exit(f"cannot rehearse: {reason}")
    var = tempfile.mkdtemp(prefix="kd-rehearsal-")
    with SshLab(hosts=2, gpus=4) as lab:
        say(f"test hosts ({lab.mode}): " + ", ".join(f"{h.address}:{h.port}" for h in lab.hosts))
        os.environ.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            KERNODECK_DEBUG="1",
            KERNODECK_VAR_DIR=var,
            KERNODECK_DATABASE_URL=f"sqlite:///{var}/rehearsal.db",
            KERNODECK_TASKS_IMMEDIATE="1",
            KERNODECK_SSH_KEY_FILE=str(lab.operator_key_path),
            KERNODECK_SSH_CONNECT_TIMEOUT="5",
        )
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        rehearse(lab)
    say("hosts, accounts and database removed")


def rehearse(lab):
    from kernodeck.accounts import services as account_services
    from kernodeck.core import clock
    from kernodeck.orders import capacity
    from kernodeck.orders import services as order_services
    from kernodeck.provisioning import driving, node_health, selectors, services
    from kernodeck.provisioning.drivers.ssh import fingerprint
    from kernodeck.provisioning.models import Node
    from tests.factories import make_offer, make_operator, make_user

    host = lab.hosts[0]
    operator = make_operator()
    offer = make_offer(units_total=0, slug="rehearsal-h100")
    node = services.node_create(
        name="rehearsal-01",
        offer=offer,
        gpu_count=4,
        host=host.address,
        port=host.port,
        driver="ssh",
        admin_user="root",
        actor=operator,
    )
    Node.objects.filter(pk=node.pk).update(
        agent_dir=host.agent_dir,
        recipes={"python": 'set -e\npython3 -m venv --without-pip "$KD_WORKSPACE/venv"\n'},
    )
    driving.nodes_inspect()
    node.refresh_from_db()
    say(f"new node {node.name}: {node.state} — {node.state_reason}")
    say(f"operator compares and accepts {fingerprint(node.host_key_offered)}")
    node_health.node_host_key_accept(node=node, offered=node.host_key_offered, actor=operator)
    driving.nodes_inspect()  # the first successful inspection puts it in service
    node.refresh_from_db()
    say(f"in service: {node.state}; health: {node.health}")

    customer = make_user()
    key_path, public = lab.make_key("customer")
    account_services.ssh_key_add(user=customer, public_key=public, name="laptop")
    order = order_services.order_register(
        owner=customer, offer=offer.slug, days=7, units=2, preparation="python"
    )
    say(f"order {order.reference} registered; settling it (as a confirmed payment would)")
    order_services.order_settle(order=order, cause={"rehearsal": True})
    order.refresh_from_db()
    access = selectors.access_for_owner(order=order)
    period = f"{order.starts_at:%Y-%m-%d %H:%M} → {order.ends_at:%Y-%m-%d %H:%M}"
    say(f"rental {order.rental_state}, {period}")
    say(f"access: {access.ssh_command}")
    probe = subprocess.run(  # noqa: S603 (the lab's own ssh command line)
        [*host.ssh_argv(access.user, key_path), "echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"],
        capture_output=True,
        text=True,
        check=False,
    )
    say(f"customer's login: {probe.stdout.strip() or probe.stderr.strip()}")

    services.rental_extend(
        order=order, until=order.ends_at + timedelta(days=3), reason="rehearsal", actor=operator
    )
    order.refresh_from_db()
    say(f"extended until {order.ends_at:%Y-%m-%d %H:%M}")
    clock.freeze(order.ends_at + timedelta(minutes=1))
    say(f"clock moved past the end; ended: {services.rentals_end_due()}")
    again = subprocess.run(  # noqa: S603
        [*host.ssh_argv(access.user, key_path), "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    say(f"login after the end: exit {again.returncode} {again.stderr.strip()}")
    say(f"units available again: {capacity.units_free(offer=offer)}")
    clock.freeze(None)


if __name__ == "__main__":
    main()
