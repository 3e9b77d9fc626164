"""A slot is free only when its node says so (issue 20, item 2), on real SSH test hosts.

Ending or refunding a rental whose node cannot be reached (link cut, sshd stopped, host key
changed) takes the customer's access away at once but keeps the slots held; the release is
retried by the minute sweep for as long as it takes; past the overdue threshold it is an
alert on the desk and its node takes no new rental; once the node is mended the account is
locked, the slots are freed, the alert clears and the "ended" e-mail goes, once.
"""

from datetime import timedelta

import pytest
from django.core import mail

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.orders import capacity
from kernodeck.orders.models import RentalState
from kernodeck.provisioning import alerts, driving, node_health, selectors, services
from kernodeck.provisioning.models import Alert, AlertKind, Allocation, Node, NodeState
from kernodeck.provisioning.selectors import END_BEING_APPLIED
from tests.factories import PASSWORD, make_offer, make_operator, make_order
from tests.provisioning import test_ssh_provisioning
from tests.provisioning.test_ssh_provisioning import customer_with_key, login, settle, ssh_node
from tests.sshhosts import ssh_lab  # noqa: F401 (the module-scoped fixture)

pytestmark = pytest.mark.django_db(transaction=True)

lab = test_ssh_provisioning.lab  # the same fixture: a reset lab, the operator's key


def ended_mails(order) -> int:
    from kernodeck.notifications.models import OutboxMessage

    return OutboxMessage.objects.filter(account=order.owner, event="rental_ended").count()


def held(order) -> int:
    return Allocation.objects.filter(order=order, released_at__isnull=True).count()


def test_an_end_while_the_link_is_cut_holds_the_slots_alerts_and_completes_once_mended(
    lab, client
):
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    customer, key_path = customer_with_key(lab, "laptop")
    order = settle(
        make_order(owner=customer, offer=offer, units=host.gpu_count, preparation="python")
    )
    assert order.rental_state == RentalState.ACTIVE
    account = selectors.latest_delivery(order).user
    assert login(host, account, key_path, "true").returncode == 0
    mail.outbox.clear()

    host.cut()
    services.rental_end(order=order, reason="ticket 7", actor=make_operator())
    order.refresh_from_db()
    # The rental is over for the customer at once; the node has not confirmed yet.
    assert order.rental_state == RentalState.ENDED
    assert selectors.access_for_owner(order=order) is None
    assert selectors.rental_overview_reason(order=order) == str(END_BEING_APPLIED)
    assert [s.status for s in selectors.rental_overview(order=order).stages][-1] == "current"
    assert held(order) == host.gpu_count
    assert capacity.units_free(offer=offer) == 0
    assert ended_mails(order) == 0
    step = node_health.rental_steps(order)[-1]
    assert step.data["step"] == "release" and "unreachable" in step.data["detail"]

    # Nobody can buy the held slots meanwhile.
    other, _other_key = customer_with_key(lab, "desktop")
    with pytest.raises(Conflict):
        make_order(owner=other, offer=offer, units=1, preparation="python")

    # Minutes later, still cut: retried, then overdue: an alert, the node out of service.
    clock.freeze(clock.now() + timedelta(minutes=11))
    assert driving.rentals_release_sweep() == 0
    assert held(order) == host.gpu_count
    alert = Alert.objects.get(kind=AlertKind.RELEASE_OVERDUE)
    assert (alert.order_id, alert.node_id, alert.resolved_at) == (order.pk, node.pk, None)
    assert list(alerts.alerts_open()) == [alert]
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE
    assert [m.to for m in mail.outbox if "Release overdue" in m.subject] == [
        ["ops@kernodeck.test"]
    ]
    # On top of the desk, with what to do, and the release waiting with its error.
    operator = make_operator()
    assert client.login(email=operator.email, password=PASSWORD)
    desk = client.get("/backoffice/rentals/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f"The end of {order.reference} has not been confirmed by {node.name}" in desk
    assert "What to do:" in desk and "Releases waiting for their node" in desk
    driving.rentals_release_sweep()  # seen again: no second alert
    assert Alert.objects.count() == 1
    assert Allocation.objects.filter(order=order).first().release_attempts >= 3

    # Mended: the next sweep locks the account, frees the slots, clears the alert.
    host.restore()
    clock.freeze(clock.now() + timedelta(minutes=1))
    assert driving.rentals_release_sweep() == 1
    assert held(order) == 0
    refused = login(host, account, key_path, "true")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    alert.refresh_from_db()
    assert alert.resolved_at is not None
    assert list(alerts.alerts_open()) == []
    desk = client.get("/backoffice/rentals/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert order.reference not in desk
    node.refresh_from_db()
    assert node.state == NodeState.AVAILABLE
    assert selectors.rental_overview_reason(order=order) == ""
    assert ended_mails(order) == 1
    # The freed slots are sold again, and work.
    assert capacity.units_free(offer=offer) == host.gpu_count
    again = settle(make_order(owner=other, offer=offer, units=1, preparation="python"))
    assert again.rental_state == RentalState.ACTIVE
    driving.rentals_release_sweep()  # nothing left to release: no second e-mail
    assert ended_mails(order) == 1


def test_a_refund_while_sshd_is_stopped_locks_the_account_once_it_is_back(lab):
    host = lab.hosts[1]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    Node.objects.filter(pk=node.pk).update(recipes={"python": "echo broken >&2\nexit 3\n"})
    customer, key_path = customer_with_key(lab, "laptop")
    order = settle(make_order(owner=customer, offer=offer, units=1, preparation="python"))
    # The preparation failed on the node: its account exists there, with its GPU.
    steps = [e.data.get("detail", "")[:300] for e in node_health.rental_steps(order)]
    assert order.rental_state == RentalState.PROVISIONING_FAILED, steps
    assert [a.pw_name for a in lab.accounts()] != [], steps
    account = lab.accounts()[0].pw_name

    host.stop()
    services.rental_refund(order=order, reason="could not prepare", actor=make_operator())
    order.refresh_from_db()
    assert order.rental_state == RentalState.ENDED
    assert held(order) == 1  # the node did not confirm yet

    host.start()
    assert driving.rentals_release_sweep() == 1
    assert held(order) == 0
    assert login(host, account, key_path, "true").returncode == 255
    assert lab.accounts() == []  # no retention: wiped
    assert ended_mails(order) == 0  # the refund e-mail said it all


def test_an_end_behind_a_changed_host_key_waits_for_the_operator_to_accept_it(lab):
    host = lab.hosts[0]
    offer = make_offer(units_total=0)
    node = ssh_node(offer, host)
    customer, key_path = customer_with_key(lab, "laptop")
    order = settle(make_order(owner=customer, offer=offer, units=1, preparation="python"))
    account = selectors.latest_delivery(order).user

    host.rotate_host_key()
    services.rental_end(order=order, reason="ticket 9", actor=make_operator())
    assert held(order) == 1
    node.refresh_from_db()
    assert node.state == NodeState.MAINTENANCE  # the host key blames the node at once
    assert login(host, account, key_path, "true").returncode == 0  # nothing sent to it

    node_health.node_host_key_accept(
        node=node, offered=host.host_public_key(), actor=make_operator()
    )
    assert driving.rentals_release_sweep() == 1
    assert held(order) == 0
    assert login(host, account, key_path, "true").returncode == 255


def test_kernodeck_admins_names_the_alert_recipients():
    from config.settings import parse_admins

    assert parse_admins("Ana Ops <ana@ops.test>, pager@ops.test , Bad Entry") == [
        ("Ana Ops", "ana@ops.test"),
        ("pager@ops.test", "pager@ops.test"),
    ]
    assert parse_admins("") == []


def test_an_operator_acknowledges_an_alert_and_it_leaves_the_desk(client, settings):
    settings.ADMINS = [("Ops", "ops@kernodeck.test")]

    offer = make_offer(units_total=1)
    node = offer.nodes.get()
    alert, created = alerts.alert_raise(
        kind=AlertKind.HOST_KEY_CHANGED,
        key=f"host_key_changed:{node.name}",
        node=node,
        message="The host key changed.",
        action="Check the machine, then accept the key.",
    )
    assert created is True
    assert alerts.alert_raise(
        kind=AlertKind.HOST_KEY_CHANGED,
        key=f"host_key_changed:{node.name}",
        node=node,
        message="again",
        action="again",
    ) == (alert, False)
    assert [m.subject for m in mail.outbox] == [f"[Kernodeck] {node.name}: Host key changed"]
    assert [(m.from_email, m.to) for m in mail.outbox] == [
        (settings.DEFAULT_FROM_EMAIL, ["ops@kernodeck.test"])
    ]
    operator = make_operator()
    assert client.login(email=operator.email, password=PASSWORD)
    assert "The host key changed." in client.get("/backoffice/rentals/").content.decode()
    response = client.post(f"/backoffice/alerts/{alert.pk}/acknowledge/")
    assert response.status_code == 302
    alert.refresh_from_db()
    assert alert.acknowledged_by == operator
    assert "The host key changed." not in client.get("/backoffice/rentals/").content.decode()
    assert Alert.objects.count() == 1
