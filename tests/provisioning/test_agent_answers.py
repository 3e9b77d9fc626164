"""The agent's answers cross one checked boundary (issue 20, item 8): a schema per command;
malformed answers are a DriverError with the reason; one node's nonsense is recorded on
that node and the inspection goes on to the next."""

import pytest

from kernodeck.provisioning import drivers, driving
from kernodeck.provisioning.drivers.answers import MalformedAnswer, check_answer, clean_text
from kernodeck.provisioning.drivers.base import DriverError, NodeHealth
from kernodeck.provisioning.drivers.ssh import blames_node
from kernodeck.provisioning.models import Node, NodeState
from tests.factories import make_offer, make_ssh_node

REF = "KD-AB12-CD34"
ACCOUNT = "kd-ab12cd34"


def created(**fields):
    return {"ok": True, "account": ACCOUNT, "gpus": [0, 1], "keys": 1, "changed": True} | fields


def test_a_well_formed_create_answer_passes_and_keeps_its_fields():
    assert check_answer("n1", "create", created(), reference=REF) == created()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"ok": True, "gpus": [0], "keys": 1, "changed": True}, "account is not"),
        (created(gpus=8), "gpus is not a list"),
        (created(gpus=[0, True]), "not a GPU index"),
        (created(account="root"), "account is not"),
        (created(account="kd-someoneelse"), "is not the account of KD-AB12-CD34"),
        (created(changed="yes"), "changed is not a boolean"),
        ({"ok": "false", "error": "x"}, "ok is not a boolean"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_malformed_answer_is_a_final_driver_error_with_the_reason(answer, problem):
    with pytest.raises(MalformedAnswer) as caught:
        check_answer("n1", "create", answer, reference=REF)
    assert isinstance(caught.value, DriverError) and caught.value.retryable is False
    assert problem in caught.value.message
    assert caught.value.message.startswith("The agent on n1 gave a malformed answer to create")


def test_logs_lose_nul_control_characters_and_ansi_escapes():
    answer = {"ok": True, "status": "done", "log": "pip\x00 ok\x1b[31m red\x1b[0m\n\x07done"}
    out = check_answer("n1", "prepare", answer, reference=REF)
    assert out["log"] == "pip ok red\ndone"
    with pytest.raises(MalformedAnswer, match="log is not a text"):
        check_answer("n1", "prepare", {"ok": True, "status": "done", "log": {"a": 1}})
    assert clean_text("a\x00b\tc") == "ab\tc"


def test_a_prepare_answer_keeps_an_absolute_socket_path_and_refuses_any_other():
    sock = "/home/kd-ab12cd34/.kernodeck/run/notebook.sock"
    answer = {"ok": True, "status": "done", "socket": sock, "token": "t", "url": "http://x/"}
    assert check_answer("n1", "prepare", answer, reference=REF)["socket"] == sock
    for bad in ("notebook.sock", "/home/../etc/shadow", "/a b", 7):
        with pytest.raises(MalformedAnswer, match="socket is not"):
            check_answer("n1", "prepare", answer | {"socket": bad}, reference=REF)


def test_a_status_without_account_and_a_refusal_with_junk_are_handled():
    with pytest.raises(MalformedAnswer, match="account"):
        check_answer("n1", "status", {"ok": True, "known": False, "exists": False})
    refusal = check_answer("n1", "status", {"ok": False, "error": "bad\x00 \x1b[1mthing"})
    assert refusal == {"ok": False, "error": "bad thing"}


@pytest.mark.parametrize(
    "inventory",
    [
        {"ok": True, "gpus": 8, "disk": {}},
        {"ok": True, "gpus": [], "disk": [1, 2]},
        {"ok": True, "gpus": [{"index": "0"}], "disk": {}},
    ],
)
def test_a_malformed_inventory_is_refused(inventory):
    with pytest.raises(MalformedAnswer):
        check_answer("n1", "inventory", inventory)


def test_an_inventory_keeps_a_clean_driver_version():
    out = check_answer(
        "n1",
        "inventory",
        {"ok": True, "gpus": [{"index": 0, "name": "H100"}], "driver_version": "550\x00.54"},
    )
    assert out["driver_version"] == "550.54"
    assert out["gpus"] == [{"index": 0, "name": "H100"}]


class NonsenseOnOneNode:
    """Inspects `bad-1` into an exception (as a broken answer used to); the rest are ok."""

    code = "ssh"
    seen: list[str] = []

    def inspect(self, node):
        self.seen.append(node.name)
        if node.name == "bad-1":
            raise ValueError("invalid literal for int() with base 10: '\x1b[31m8'")
        return NodeHealth(ok=True, detail="ok", gpus_seen=node.gpu_count)


@pytest.mark.django_db
def test_one_nodes_nonsense_is_recorded_on_it_and_the_next_node_is_still_inspected(settings):
    settings.KERNODECK_PROVISIONING_DRIVERS = {
        "manual": "kernodeck.provisioning.drivers.manual.ManualDriver",
        "ssh": f"{__name__}.NonsenseOnOneNode",
    }
    drivers._cache.clear()
    NonsenseOnOneNode.seen = []
    try:
        offer = make_offer(units_total=0)
        for name in ("bad-1", "good-2"):
            make_ssh_node(name=name, offer=offer, gpu_count=1, host="10.0.0.1")
        assert driving.nodes_inspect() == 2
    finally:
        drivers._cache.clear()
    assert NonsenseOnOneNode.seen == ["bad-1", "good-2"]
    bad, good = Node.objects.get(name="bad-1"), Node.objects.get(name="good-2")
    assert bad.health["ok"] is False and bad.health["problem"] == "bad_answer"
    assert "\x1b" not in bad.health["detail"] and "ValueError" in bad.health["detail"]
    assert bad.state == NodeState.MAINTENANCE
    assert bad.state_reason.startswith("Malformed agent answer: ValueError")
    assert good.health["ok"] is True and good.state == NodeState.AVAILABLE


@pytest.mark.parametrize(
    ("message", "blamed"),
    [
        ("ValueError: unexpected nvidia-smi line: 'garbage'", True),
        ("nvidia-smi is not installed on this host", True),
        ("GPU 3 is not present on this host", True),  # fewer GPUs than slots: a mismatch
        ("/dev/nvidia2 has no device file", True),
        ("GPU 0 is held by another rental on this host", False),  # the rental's, not the node's
        ("the preparation failed: pip: no matching distribution", False),
    ],
)
def test_the_refusals_that_blame_the_node_are_told_apart(message, blamed):
    assert blames_node(message) is blamed
