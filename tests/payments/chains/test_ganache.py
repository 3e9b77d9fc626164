"""The Ethereum watcher against a real EVM node: ganache (pinned in scripts/test-tools.sh,
installed from the npm registry into .tools/), started once for this module on a free
loopback port with chain id 1, and stopped after.

The ERC-20 under test is our own (data/TestToken.sol, compiled runtime bytecode in
data/TestToken.json) placed at the canonical USDT and USDC addresses with
`evm_setAccountCode`; a Forwarder contract passes ether on by an internal call. Each test
starts from the same chain (`evm_snapshot` before, `evm_revert` after); reorgs are
`evm_revert` to a snapshot taken inside the test, then other blocks mined. Ganache mines a
block per transaction; `evm_mine` mines empty ones. Every pass is the real one
(`watching.watch_network`), through the real adapter, over HTTP.
"""

import json
import os
import shutil
import socket
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from kernodeck.core import clock
from kernodeck.payments import methods, review, review_selectors, services, watching
from kernodeck.payments.chains.base import ChainError, WatchTarget
from kernodeck.payments.chains.ethereum import EthereumAdapter
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentMethod,
    Transfer,
    TransferKind,
)
from kernodeck.payments.wallets import demo_wallet
from tests.factories import make_offer, make_order, make_user
from tests.ledger.helpers import funded_account

ROOT = Path(__file__).resolve().parents[3]
GANACHE = ROOT / ".tools" / "node_modules" / ".bin" / "ganache"
BYTECODE = json.loads((Path(__file__).parent / "data" / "TestToken.json").read_text())[
    "runtime_bytecode"
]
USDT = methods.token_contract("usdt-ethereum", testnet=False)
USDC = methods.token_contract("usdc-ethereum", testnet=False)
FORWARDER = "0x" + "f0" * 20
CONFIRMATIONS = 3  # the Ethereum methods' confirmations here: few blocks to mine
# Function selectors (the first four bytes of keccak256 of the signature).
MINT = "0x40c10f19"  # mint(address,uint256)
TRANSFER = "0xa9059cbb"  # transfer(address,uint256)
FORWARD = "0x101e8952"  # forward(address)

pytestmark = [pytest.mark.django_db, pytest.mark.outside]


class Ganache:
    def __init__(self, url: str, process: subprocess.Popen):
        self.url = url
        self.process = process
        self.client = httpx.Client(timeout=30)
        self.payer = ""

    def rpc(self, method: str, *params):
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
        answer = self.client.post(self.url, json=body).json()
        if "error" in answer:
            raise AssertionError(f"{method}: {answer['error']}")
        return answer["result"]

    def head(self) -> int:
        return int(self.rpc("eth_blockNumber"), 16)

    def mine(self, blocks: int = 1) -> None:
        self.rpc("evm_mine", {"blocks": blocks})

    def send(self, to: str, *, value: int = 0, data: str = "0x") -> int:
        """A transaction from the payer, mined at once; the block it landed in."""
        tx = {"from": self.payer, "to": to, "value": hex(value), "data": data, "gas": hex(200_000)}
        txid = self.rpc("eth_sendTransaction", tx)
        receipt = self.rpc("eth_getTransactionReceipt", txid)
        assert receipt["status"] == "0x1", receipt
        return int(receipt["blockNumber"], 16)

    def pay(self, intent, amount: int) -> int:
        """`amount` base units of the intent's asset to its address, as a wallet sends it."""
        if intent.method.asset == "ETH":
            return self.send(intent.address, value=amount)
        contract = {"USDT": USDT, "USDC": USDC}[intent.method.asset]
        return self.send(contract, data=TRANSFER + word(intent.address) + f"{amount:064x}")


def word(address: str) -> str:
    return address[2:].lower().rjust(64, "0")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def node():
    if shutil.which("node") is None or not GANACHE.exists():
        pytest.skip(
            "ganache is not installed (needs node and npm): run scripts/test-tools.sh, "
            "which installs ganache 7.9.2 into .tools/"
        )
    port = free_port()
    process = subprocess.Popen(
        [
            str(GANACHE),
            "--server.host=127.0.0.1",
            f"--server.port={port}",
            "--chain.chainId=1",
            "--chain.hardfork=shanghai",
            "--wallet.deterministic",
            "--wallet.totalAccounts=1",
            "--logging.quiet",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "NODE_OPTIONS": ""},
    )
    chain = Ganache(f"http://127.0.0.1:{port}", process)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                chain.rpc("eth_chainId")
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"ganache did not start: {process.stderr.read().decode()[-2000:]}"
                    ) from None
                time.sleep(0.2)
        [chain.payer] = chain.rpc("eth_accounts")
        for contract in (USDT, USDC):
            chain.rpc("evm_setAccountCode", contract, BYTECODE["TestToken"])
            chain.send(contract, data=MINT + word(chain.payer) + f"{10**15:064x}")
        chain.rpc("evm_setAccountCode", FORWARDER, BYTECODE["Forwarder"])
        yield chain
    finally:
        chain.client.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def chain(node, configured, fresh_rates, settings):
    """The module's node, back where it was after each test; the watcher pointed at it."""
    settings.KERNODECK_ETHEREUM_RPC_URL = node.url
    PaymentMethod.objects.filter(chain="ethereum").update(confirmations=CONFIRMATIONS)
    snapshot = node.rpc("evm_snapshot")
    yield node
    node.rpc("evm_revert", snapshot)


def instructions(method: str, *, offer=None):
    order = make_order(offer=offer or make_offer(units_total=20))
    funded_account(order.owner, "1000", make_user(staff=True))
    return services.payment_intent_create_for_order(
        order=order, method_code=method, actor=order.owner
    )


def watch() -> dict:
    report = watching.watch_network("ethereum")
    assert "error" not in report, report
    return report


def status(intent) -> str:
    intent.refresh_from_db()
    return intent.status


def counted(intent) -> list:
    return list(
        intent.transfers.filter(kind__in=watching.COUNTED_KINDS, disappeared_at__isnull=True)
    )


SETTLED = {IntentStatus.CONFIRMED, IntentStatus.ALLOCATED}


def test_eth_usdt_and_usdc_exact_under_and_over_then_money_after_settlement(chain):
    offer = make_offer(units_total=20)
    cases = {}
    for method in ("eth-ethereum", "usdt-ethereum", "usdc-ethereum"):
        for case in ("exact", "under", "over"):
            intent = instructions(method, offer=offer)
            due = int(intent.amount_units)
            amount = {"exact": due, "under": due // 2, "over": due * 2}[case]
            chain.pay(intent, amount)
            cases[method, case] = (intent, amount)
    chain.mine(CONFIRMATIONS - 1)

    watch()

    for (method, case), (intent, amount) in cases.items():
        [transfer] = counted(intent)
        assert int(transfer.amount_base) == amount, (method, case)
        assert transfer.block_hash.startswith("0x") and not transfer.final
        expected = {"exact": SETTLED, "under": {IntentStatus.DETECTED}}.get(
            case, {IntentStatus.OVERPAID}
        )
        assert status(intent) in expected, (method, case, intent.status)

    # After the expiry the part payments are underpaid cases.
    clock.freeze(max(i.expires_at for i, _ in cases.values()) + timedelta(minutes=1))
    chain.mine()
    watch()
    for method in ("eth-ethereum", "usdt-ethereum", "usdc-ethereum"):
        assert status(cases[method, "under"][0]) == IntentStatus.UNDERPAID

    # A second payment to a settled payment is recorded, for an operator (never counted).
    settled, amount = cases["eth-ethereum", "exact"]
    chain.pay(settled, amount)
    chain.mine(2 * CONFIRMATIONS + 5)  # past the rescan window of the next pass
    watch()
    again = settled.transfers.exclude(pk=counted(settled)[0].pk).get()
    assert again.kind == TransferKind.UNALLOCATED
    assert again in review_selectors.review_transfers()


def test_a_payment_to_expired_instructions_between_late_polls_is_recorded(chain, settings):
    settings.KERNODECK_WATCH_LATE_INTERVAL = 300
    created = clock.now() - timedelta(seconds=settings.KERNODECK_PAYMENT_EXPIRY_SECONDS + 600)
    clock.freeze(created)
    intent = instructions("usdt-ethereum")
    clock.freeze(None)
    watch()  # the first pass polls the late window too: nothing there, it expires
    assert status(intent) == IntentStatus.EXPIRED
    assert ChainState.objects.get(network="ethereum").late_polled_at is not None

    block = chain.pay(intent, int(intent.amount_units))
    chain.mine(2 * CONFIRMATIONS + 5)  # the cursor moves past the payment's block now
    report = watch()  # a pass well inside the late interval

    assert report["polled"] == report["watched"]  # every watched address, in every block
    [transfer] = counted(intent)
    assert (transfer.kind, transfer.block_height) == (TransferKind.LATE, block)
    assert status(intent) == IntentStatus.LATE


def test_a_reorg_uncounts_a_transfer_and_a_deep_one_is_rescanned_from_the_fork(chain):
    part = instructions("eth-ethereum")
    full = instructions("usdc-ethereum")
    fork = chain.rpc("evm_snapshot")
    chain.pay(part, int(part.amount_units) // 2)
    chain.mine(2 * CONFIRMATIONS + 8)  # deeper than the rescan window of the next pass
    watch()
    [gone] = counted(part)
    assert status(part) == IntentStatus.DETECTED

    # Another branch from before the payment, longer, paying the other intent in a block
    # that the last pass's cursor is already past.
    chain.rpc("evm_revert", fork)
    chain.mine(2)
    block = chain.pay(full, int(full.amount_units))
    chain.mine(2 * CONFIRMATIONS + 12)
    watch()

    gone.refresh_from_db()
    assert gone.disappeared_at is not None
    assert counted(part) == []
    assert status(part) == IntentStatus.PENDING
    [found] = counted(full)
    assert found.block_height == block
    assert found.block_hash == chain.rpc("eth_getBlockByNumber", hex(block), False)["hash"]
    assert status(full) in SETTLED


def test_a_reorg_before_confirmation_uncounts_the_payment(chain):
    intent = instructions("usdt-ethereum")
    fork = chain.rpc("evm_snapshot")
    chain.pay(intent, int(intent.amount_units))
    watch()
    assert status(intent) == IntentStatus.DETECTED

    chain.rpc("evm_revert", fork)
    chain.mine(3)  # the payment is not in this branch
    watch()

    assert counted(intent) == []
    assert intent.transfers.get().disappeared_at is not None
    assert status(intent) == IntentStatus.PENDING


def test_a_node_on_another_chain_is_refused_as_the_networks_error(chain, settings):
    intent = instructions("eth-ethereum")
    chain.pay(intent, int(intent.amount_units))
    chain.mine(CONFIRMATIONS)
    settings.KERNODECK_CHAIN_MODE = "testnet"  # Sepolia (11155111) expected, the node is 1

    report = watching.watch_network("ethereum")

    assert "chain id 1, not the configured 11155111" in report["error"]
    assert "chain id 1" in ChainState.objects.get(network="ethereum").last_error
    assert not Transfer.objects.exists()
    with pytest.raises(ChainError, match="chain id 1"):
        EthereumAdapter(chain.url, token_contracts={}, chain_id=5).scan([WatchTarget(FORWARDER)])


def test_a_finalized_block_at_the_head_is_not_believed(chain):
    intent = instructions("eth-ethereum")
    block = chain.pay(intent, int(intent.amount_units))
    # Ganache calls its head finalized: every payment would be final at once.
    assert int(chain.rpc("eth_getBlockByNumber", "finalized", False)["number"], 16) == block

    watch()

    [transfer] = counted(intent)
    assert (transfer.final, transfer.confirmations) == (False, 1)
    assert status(intent) == IntentStatus.DETECTED
    chain.mine(CONFIRMATIONS - 1)
    watch()
    assert status(intent) in SETTLED


def test_ether_forwarded_by_a_contract_opens_an_unexplained_balance_case(chain):
    forwarded = instructions("eth-ethereum")
    direct = instructions("eth-ethereum")
    amount = int(forwarded.amount_units)
    chain.send(FORWARDER, value=amount, data=FORWARD + word(forwarded.address))
    chain.pay(direct, int(direct.amount_units))
    chain.mine(CONFIRMATIONS)

    watch()  # the first pass reads the balances (as every late interval does)

    assert counted(forwarded) == []  # no transaction to the address, no event: unseen...
    [case] = review_selectors.review_transfers()
    assert (case.kind, case.address, int(case.amount_base)) == (
        TransferKind.UNEXPLAINED,
        forwarded.address,
        amount,
    )
    assert case.intent_id == forwarded.pk
    assert status(direct) in SETTLED  # ...while the ordinary payment explains its balance
    watch()  # read again: the same money opens no second case
    assert Transfer.objects.filter(kind=TransferKind.UNEXPLAINED).count() == 1

    # The operator attaches it to the payment: then it counts.
    review.review_transfer_resolve(
        transfer_id=case.pk,
        actor=make_user(staff=True),
        note="forwarded by the customer's contract wallet",
        intent_id=forwarded.pk,
    )
    assert status(forwarded) in SETTLED


def test_a_settled_payment_whose_block_is_reorganised_away_stops_counting(chain):
    intent = instructions("usdc-ethereum")
    fork = chain.rpc("evm_snapshot")
    chain.pay(intent, int(intent.amount_units))
    chain.mine(CONFIRMATIONS)
    watch()
    assert status(intent) in SETTLED

    chain.rpc("evm_revert", fork)
    chain.mine(CONFIRMATIONS + 2)
    watch()

    # The books no longer count money the chain does not hold (what becomes of the settled
    # order is the settlement step's reversal case, issue 22 item 3).
    assert counted(intent) == []
    assert intent.transfers.get().disappeared_at is not None


def test_regtest_watches_usdt_and_usdc_at_the_mainnet_addresses_of_the_dev_chain(chain, settings):
    settings.KERNODECK_CHAIN_MODE = "regtest"
    settings.KERNODECK_ETHEREUM_CHAIN_ID = 1  # this node's; a dev chain's 1337 by default
    settings.KERNODECK_XPUBS = {"ethereum": demo_wallet("ethereum", testnet=True).public_key}
    paid = []
    for method in ("usdt-ethereum", "usdc-ethereum"):  # Sepolia has no USDT; its USDC differs
        intent = instructions(method)
        assert intent.uri.startswith(f"ethereum:{USDT if method == 'usdt-ethereum' else USDC}@1/")
        chain.pay(intent, int(intent.amount_units))
        paid.append(intent)
    chain.mine(CONFIRMATIONS - 1)

    watch()

    assert [status(intent) for intent in paid] == [IntentStatus.ALLOCATED] * 2
