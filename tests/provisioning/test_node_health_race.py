"""Node health and host-key acceptance racing in real concurrent PostgreSQL transactions."""

import threading

import pytest
from django.db import connection, connections

from kernodeck.core.errors import Conflict
from kernodeck.core.models import AuditEvent
from kernodeck.provisioning import node_health
from kernodeck.provisioning.drivers.base import NodeHealth
from kernodeck.provisioning.models import Node, NodeState
from tests.factories import make_offer, make_operator, make_ssh_node

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

OFFERED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk9cTq8lJ0bq6n0d0cB3m6m0p6mNlq5Hk3Yk0cJ3Qz1"


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip(
            "race tests need PostgreSQL: set KERNODECK_DATABASE_URL=postgres://… "
            "(SQLite serialises writers, so there is no race to test)"
        )


def ssh_node():
    offer = make_offer(units_total=0)
    return make_ssh_node(name=f"{offer.slug}-n1", offer=offer, gpu_count=4, host="10.9.0.2")


def race(racers, work):
    start = threading.Barrier(racers)
    outcomes = []

    def run():
        try:
            start.wait()
            outcomes.append(work())
        except Conflict:
            outcomes.append("refused")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


@pytest.mark.parametrize("racers", [2, 6])
def test_concurrent_reports_of_a_changed_key_take_the_node_out_and_alert_once(racers, mailoutbox):
    node = ssh_node()
    health = NodeHealth(
        ok=False,
        detail="The SSH host key of n1 changed.",
        data={"problem": "host_key_changed", "offered_key": OFFERED},
    )

    race(racers, lambda: node_health.node_health_consequences(node=node, health=health).state)

    node.refresh_from_db()
    assert (node.state, node.host_key_offered) == (NodeState.MAINTENANCE, OFFERED)
    assert AuditEvent.objects.filter(action="provisioning.node_state_changed").count() == 1
    assert AuditEvent.objects.filter(action="provisioning.node_host_key_changed").count() == 1


def test_one_of_two_operators_accepting_the_same_key_wins():
    node = ssh_node()
    Node.objects.filter(pk=node.pk).update(host_key_offered=OFFERED)
    operators = [make_operator(), make_operator()]

    outcomes = race(
        2,
        lambda: (
            node_health.node_host_key_accept(
                node=node, offered=OFFERED, actor=operators.pop()
            ).host_key
        ),
    )

    assert sorted(outcomes) == ["refused", OFFERED]
    assert AuditEvent.objects.filter(action="provisioning.node_host_key_accepted").count() == 1
