"""The ssh nodes' back-office pages and settings: who may see them, accepting a host key,
changing how the driver runs a node (refusals change nothing)."""

import pytest

from kernodeck.core.errors import InvalidInput
from kernodeck.core.models import AuditEvent
from kernodeck.provisioning import node_health, services
from kernodeck.provisioning.drivers.ssh import fingerprint
from kernodeck.provisioning.models import Node
from tests.factories import PASSWORD, make_offer, make_operator, make_user

pytestmark = pytest.mark.django_db

OFFERED = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk9cTq8lJ0bq6n0d0cB3m6m0p6mNlq5Hk3Yk0cJ3Qz1"


def ssh_node(**fields):
    offer = make_offer(units_total=0)
    node = services.node_create(
        name=f"{offer.slug}-n1", offer=offer, gpu_count=4, host="10.9.0.2", driver="ssh"
    )
    Node.objects.filter(pk=node.pk).update(**fields)
    node.refresh_from_db()
    return node


def signed_in(client, user):
    assert client.login(email=user.email, password=PASSWORD)
    return client


def test_only_operators_with_the_permission_see_the_nodes(client):
    node = ssh_node()
    assert client.get("/backoffice/nodes/").status_code == 302  # to sign-in
    signed_in(client, make_user(staff=True))
    assert client.get("/backoffice/nodes/").status_code == 403
    assert client.get(f"/backoffice/nodes/{node.name}/").status_code == 403


def test_the_list_shows_state_health_and_the_key_to_accept(client):
    node = ssh_node(host_key_offered=OFFERED, state="maintenance", state_reason="Host key…")
    page = signed_in(client, make_operator()).get("/backoffice/nodes/").content.decode()
    assert node.name in page
    assert fingerprint(OFFERED) in page
    assert "to accept" in page


def test_an_operator_accepts_the_key_they_saw_and_only_that_one(client):
    node = ssh_node(host_key_offered=OFFERED)
    client.enforce_csrf_checks = False
    signed_in(client, make_operator())
    other = OFFERED[:-4] + "AAAA"

    refused = client.post(
        f"/backoffice/nodes/{node.name}/", {"action": "accept", "offered": other}
    )
    assert refused.status_code == 200
    assert "The node offers another host key now; look at it again." in refused.content.decode()
    node.refresh_from_db()
    assert (node.host_key, node.host_key_offered) == ("", OFFERED)

    done = client.post(f"/backoffice/nodes/{node.name}/", {"action": "accept", "offered": OFFERED})
    assert done.status_code == 302
    node.refresh_from_db()
    assert (node.host_key, node.host_key_offered) == (OFFERED, "")
    event = AuditEvent.objects.get(action="provisioning.node_host_key_accepted")
    assert event.after == {"host_key": OFFERED}


def test_settings_are_saved_and_audited(client):
    node = ssh_node()
    signed_in(client, make_operator())
    response = client.post(
        f"/backoffice/nodes/{node.name}/",
        {
            "action": "settings",
            "retention_hours": "48",
            "agent_dir": "/opt/kernodeck",
            "torch_index_url": "https://wheels.example.org/cu128",
            "inference_model": "Qwen/Qwen3-8B",
            "recipe_notebook": "echo hi\r\n",
        },
    )
    assert response.status_code == 302
    node.refresh_from_db()
    assert (node.retention_hours, node.agent_dir, node.recipes) == (
        48,
        "/opt/kernodeck",
        {"notebook": "echo hi\n"},
    )
    assert AuditEvent.objects.filter(action="provisioning.node_ssh_settings_changed").count() == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"retention_hours": "٣"}, "retention_hours"),
        ({"retention_hours": "³"}, "retention_hours"),
        ({"retention_hours": "-1"}, "retention_hours"),
        ({"retention_hours": "8761"}, "retention_hours"),
        ({"retention_hours": "1e3"}, "retention_hours"),
        ({"agent_dir": "var/lib/kernodeck"}, "agent_dir"),
        ({"agent_dir": "/var/lib/../../etc"}, "agent_dir"),
        ({"agent_dir": "/var/lib/kd;rm -rf /"}, "agent_dir"),
        ({"agent_dir": "/var/lib/\x00"}, "agent_dir"),
        ({"torch_index_url": "javascript:alert(1)"}, "torch_index_url"),
        ({"inference_model": "model; reboot"}, "inference_model"),
        ({"recipes": {"python": "echo \x00"}}, "recipes"),
        ({"recipes": {"python": "x" * 20_001}}, "recipes"),
        ({"recipes": {"shell": "id"}}, "recipes"),
    ],
)
def test_nonsense_settings_are_refused_and_change_nothing(changes, field):
    node = ssh_node()
    values = {"retention_hours": "0", "agent_dir": "/var/lib/kernodeck"} | changes
    with pytest.raises(InvalidInput) as refused:
        node_health.node_ssh_settings_update(node=node, actor=make_operator(), **values)
    assert refused.value.field == field
    node.refresh_from_db()
    assert (node.retention_hours, node.agent_dir, node.recipes) == (0, "/var/lib/kernodeck", {})
    assert not AuditEvent.objects.filter(action="provisioning.node_ssh_settings_changed").exists()


def test_a_refused_setting_is_shown_next_to_its_field(client):
    node = ssh_node()
    signed_in(client, make_operator())
    response = client.post(
        f"/backoffice/nodes/{node.name}/",
        {"action": "settings", "retention_hours": "99999", "agent_dir": "/var/lib/kernodeck"},
    )
    assert response.status_code == 200
    assert "Retention is a whole number of hours from 0 to 8760." in response.content.decode()


def test_a_node_of_another_driver_has_no_ssh_page(client):
    offer = make_offer(units_total=2)
    signed_in(client, make_operator())
    assert client.get(f"/backoffice/nodes/{offer.nodes.get().name}/").status_code == 404


def bearer(client, user):
    from kernodeck.accounts import services as account_services

    _token, raw = account_services.api_token_create(user=user, name="ops")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


def test_the_ops_api_shows_the_key_to_accept_and_accepts_it(client):
    from tests.factories import api_post

    node = ssh_node(host_key_offered=OFFERED)
    bearer(client, make_operator())
    listed = {n["name"]: n for n in client.get("/api/v1/ops/nodes").json()}[node.name]
    assert (listed["host_key_fingerprint"], listed["host_key_offered"]) == ("", OFFERED)

    wrong = api_post(client, f"/ops/nodes/{node.name}/host-key", {"offered": OFFERED[:-1]})
    assert wrong.status_code == 409
    assert wrong.json() == {"detail": "The node offers another host key now; look at it again."}
    done = api_post(client, f"/ops/nodes/{node.name}/host-key", {"offered": OFFERED})
    assert done.status_code == 200
    assert (done.json()["host_key_fingerprint"], done.json()["host_key_offered"]) == (
        fingerprint(OFFERED),
        "",
    )


def test_the_ops_api_changes_ssh_settings_and_refuses_nonsense(client):
    from tests.factories import api_post

    node = ssh_node()
    bearer(client, make_operator())
    bad = api_post(
        client, f"/ops/nodes/{node.name}/ssh", {"retention_hours": 10**9, "agent_dir": "/x"}
    )
    assert bad.status_code == 422
    assert bad.json() == {
        "detail": "retention_hours: Retention is a whole number of hours from 0 to 8760."
    }
    nul = api_post(client, f"/ops/nodes/{node.name}/ssh", {"recipes": {"python": "\x00"}})
    assert nul.status_code == 422
    node.refresh_from_db()
    assert (node.retention_hours, node.recipes) == (0, {})

    done = api_post(client, f"/ops/nodes/{node.name}/ssh", {"retention_hours": 12})
    assert (done.status_code, done.json()["retention_hours"]) == (200, 12)
    customer = bearer(client, make_user())
    assert (
        api_post(customer, f"/ops/nodes/{node.name}/ssh", {"retention_hours": 1}).status_code
        == 403
    )
