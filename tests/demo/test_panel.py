"""The demo panel on a payment page: each button pays the simulator or mines, then the
watcher's early pass moves the payment; outside demo mode none of it exists."""

import os
import runpy
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from kernodeck.core.models import AuditEvent
from kernodeck.demo.profile import apply_demo_environment, simulator_environment
from kernodeck.demo.services import demo_seed_catalog
from kernodeck.ledger.selectors import balance_available
from kernodeck.orders import services as order_services
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import IntentStatus, Transfer
from kernodeck.settlement import topups as settlement_topups
from tests.factories import make_user

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db


def demo_intent(method_code, owner=None):
    payment_services.payment_methods_ensure()
    demo_seed_catalog()
    owner = owner or make_user()
    order = order_services.order_register(
        owner=owner, offer="h100-80gb", days=3, units=1, preparation="pytorch"
    )
    return payment_services.payment_intent_create_for_order(
        order=order, method_code=method_code, actor=owner
    )


def press(client, intent, action):
    return client.post(f"/demo/payments/{intent.pk}/simulate/", {"action": action})


@pytest.fixture
def signed_in(client):
    user = make_user()
    client.force_login(user)
    client.user = user
    return client


def test_exact_bitcoin_payment_is_detected_then_settles_after_enough_blocks(
    demo_chains, signed_in
):
    intent = demo_intent("btc-bitcoin", signed_in.user)

    response = press(signed_in, intent, "exact")
    intent.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == f"/payments/{intent.pk}/#status"
    assert intent.status == IntentStatus.DETECTED
    assert int(intent.received_base) == intent.amount_units

    press(signed_in, intent, "mine_one")
    intent.refresh_from_db()
    assert intent.status == IntentStatus.DETECTED  # 1 of 2 confirmations

    press(signed_in, intent, "mine_one")
    intent.refresh_from_db()
    intent.order.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert intent.order.payment_state == "settled"
    [transfer] = Transfer.objects.all()
    assert (transfer.confirmations, transfer.kind) == (2, "matched")


@pytest.mark.parametrize(
    ("method", "actions", "status"),
    [
        ("usdt-tron", ["exact", "mine_enough"], IntentStatus.ALLOCATED),
        ("eth-ethereum", ["exact", "mine_enough"], IntentStatus.ALLOCATED),
        ("sol-solana", ["exact", "mine_enough"], IntentStatus.ALLOCATED),
        ("ltc-litecoin", ["more"], IntentStatus.OVERPAID),
        ("usdc-ethereum", ["less", "expire"], IntentStatus.UNDERPAID),
        ("trx-tron", ["late"], IntentStatus.LATE),
    ],
)
def test_each_panel_case_reaches_its_state(demo_chains, signed_in, method, actions, status):
    intent = demo_intent(method, signed_in.user)

    for action in actions:
        assert press(signed_in, intent, action).status_code == 302

    intent.refresh_from_db()
    assert intent.status == status


def test_a_top_up_paid_from_the_panel_credits_the_balance(demo_chains, signed_in):
    payment_services.payment_methods_ensure()
    _topup, intent = settlement_topups.topup_create(
        account=signed_in.user, amount_usd="500", method_code="sol-solana"
    )

    press(signed_in, intent, "exact")
    press(signed_in, intent, "mine_enough")

    intent.refresh_from_db()
    assert intent.status == IntentStatus.ALLOCATED
    assert balance_available(account=signed_in.user) == Decimal("500.00")


def test_after_expiry_moves_the_window_end_with_an_audit_event(demo_chains, signed_in):
    intent = demo_intent("btc-bitcoin", signed_in.user)
    created_expiry = intent.expires_at

    press(signed_in, intent, "late")

    intent.refresh_from_db()
    assert intent.expires_at < created_expiry
    event = AuditEvent.objects.get(action="demo.payment_window_ended")
    assert event.before == {"expires_at": created_expiry.isoformat()}
    [transfer] = Transfer.objects.all()
    assert transfer.kind == "late"


@pytest.mark.parametrize("action", ["", "mine_all", "exact\x00", "٣", "x" * 5000])
def test_an_unknown_action_is_refused_and_nothing_changes(demo_chains, signed_in, action):
    intent = demo_intent("btc-bitcoin", signed_in.user)

    response = press(signed_in, intent, action)

    # A NUL byte is refused at the edge (400); other nonsense gets the panel's message.
    assert response.status_code == (400 if "\x00" in action else 302)
    intent.refresh_from_db()
    assert intent.status == IntentStatus.PENDING
    assert Transfer.objects.count() == 0
    assert demo_chains.simulator.state["transfers"] == []


def test_another_accounts_payment_is_a_404(demo_chains, signed_in):
    intent = demo_intent("btc-bitcoin")

    assert press(signed_in, intent, "exact").status_code == 404
    assert demo_chains.simulator.state["transfers"] == []


def test_a_simulator_that_does_not_answer_gives_a_message_not_an_error(
    demo_chains, signed_in, settings
):
    intent = demo_intent("btc-bitcoin", signed_in.user)
    settings.KERNODECK_DEMO_SIMULATOR_URL = "http://127.0.0.1:9"

    response = press(signed_in, intent, "exact")
    page = signed_in.get(response["Location"], HTTP_ACCEPT_LANGUAGE="en")

    assert "chain simulator does not answer" in page.content.decode()
    intent.refresh_from_db()
    assert intent.status == IntentStatus.PENDING


def test_the_panel_shows_in_demo_mode_with_the_amounts(demo_chains, signed_in):
    intent = demo_intent("btc-bitcoin", signed_in.user)

    page = signed_in.get(f"/payments/{intent.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert 'id="demo-panel"' in page
    assert page.count(f'action="/demo/payments/{intent.pk}/simulate/"') == 7
    assert "Mine 2 blocks" in page


def test_outside_demo_mode_the_panel_and_its_urls_do_not_exist(signed_in, settings):
    settings.KERNODECK_DEMO = True  # only to create demo instructions, then production
    intent = demo_intent("btc-bitcoin", signed_in.user)
    settings.KERNODECK_DEMO = False
    settings.KERNODECK_DEMO_SIMULATOR_URL = ""

    page = signed_in.get(f"/payments/{intent.pk}/").content.decode()
    responses = [press(signed_in, intent, action) for action in ("exact", "mine_one")]

    assert page.count("demo-panel") == 0 and "/demo/" not in page
    assert [r.status_code for r in responses] == [404, 404]
    intent.refresh_from_db()
    assert intent.status == IntentStatus.PENDING
    assert not AuditEvent.objects.filter(action__startswith="demo.").exists()


def test_production_commands_never_read_the_simulator(tmp_path):
    (tmp_path / "chain-simulator.port").write_text("45678")
    clean = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("KERNODECK_") and key != "DJANGO_SETTINGS_MODULE"
    }
    code = (
        "from django.conf import settings as s; "
        "print(s.KERNODECK_BITCOIN_ESPLORA_URL, s.KERNODECK_DEMO_SIMULATOR_URL or '-')"
    )
    result = subprocess.run(
        [sys.executable, "-m", "kernodeck", "shell", "-v", "0", "-c", code],
        env={
            **clean,
            "KERNODECK_VAR_DIR": str(tmp_path),
            "KERNODECK_SECRET_KEY": "x" * 60,
            "KERNODECK_DEMO_SIMULATOR_URL": "http://127.0.0.1:45678",
        },
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["https://blockstream.info/api", "-"]


def test_demo_commands_read_the_running_simulators_port(tmp_path):
    (tmp_path / "chain-simulator.port").write_text("45678")
    saved = dict(os.environ)
    try:
        for name in [*simulator_environment("x"), "KERNODECK_SECRET_KEY"]:
            os.environ.pop(name, None)
        os.environ.update({"KERNODECK_VAR_DIR": str(tmp_path), "KERNODECK_DEMO": "1"})
        apply_demo_environment()
        demo = runpy.run_path(str(ROOT / "config" / "settings.py"))
    finally:
        os.environ.clear()
        os.environ.update(saved)

    assert demo["KERNODECK_BITCOIN_ESPLORA_URL"] == "http://127.0.0.1:45678/bitcoin/api"
    assert demo["KERNODECK_SOLANA_RPC_URL"] == "http://127.0.0.1:45678/solana"
    assert demo["KERNODECK_DEMO_SIMULATOR_URL"] == "http://127.0.0.1:45678"
