#!/usr/bin/env python3
"""The chain watcher's benchmark: one pass over N open payment instructions.

    python3 bench/watcher.py [--intents 1000 10000 20000]
                             [--modes address aged block outage flood solana tron tronblocks]
                             [--repeat 3]

Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) and uses ./.venv (run
`python3 dev.py test --version` once to create it). It creates a scratch database
`kernodeck_bench_watcher` (and empties Redis db 13), starts a loopback Esplora server in its
own process (`--serve-esplora`: every address idle, blocks of BLOCK_TXS transactions paying
strangers, HTTP/1.1 keep-alive like a real API behind a proxy), then for each mode and each N
bulk-creates open BTC instructions up to N in one child process, then in another mines one
block and times a `watching.watch_network("bitcoin")` pass, `--repeat` times (the median
is shown; in block mode, after the pass that polls the new intents once). It prints a markdown
table per mode: open intents, pass seconds, HTTP requests, SQL statements, peak RSS of the pass's
process (MiB: Django, the intents loaded, the answers), and how much the pass grows when the
open intents double. Modes: `address` polls each address (KERNODECK_WATCH_BLOCK_SCAN=off;
from its cursor: its counters, and its history only when they moved; in turns within
KERNODECK_WATCH_POLL_BUDGET, all of them made just before the pass), `aged` is the same
with the instructions' ages spread over their 30 minutes (AGED_SPAN: created one after the
other as a steady flow of customers leaves them, so some are near their expiry and a few
are new), `block` scans the new
block against the watched addresses (the default), `solana` polls N open SOL instructions by
reference through the shared recipient's signatures since its cursor (the same server
answers Solana JSON-RPC: one new signature per block, touching the recipient, paying none of
ours), `outage` and `flood` are the block mode with 7 new blocks (OUTAGE_BLOCKS) or 1 500
new strangers' mempool transactions (FLOOD_TXS) before each pass, past the block scan's
limits, and `tron` polls N open TRX instructions against the same server's TronGrid routes
(the heads; every account's lists empty), `tronblocks` is Tron's block scan of the same
N (TRON_PASS_BLOCKS new blocks of TRON_BLOCK_TXS strangers' transactions before each pass,
its sweep of KERNODECK_TRON_SWEEP_ADDRESSES lists). The table's `pass` column says whether a block
pass scanned ("blocks") or fell back to polling ("addresses"). Every mode has one untimed
pass after the intents are created (its cursors, the block scan's first poll). Every
figure is from this run on this machine.

`report(argv) -> str` runs the same and returns the text (for bench/run.py).
"""

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
# Another scratch database and Redis db where two runs share a server.
DATABASE = os.environ.get("KERNODECK_BENCH_WATCHER_DATABASE", "kernodeck_bench_watcher")
REDIS_DB = os.environ.get("KERNODECK_BENCH_WATCHER_REDIS_DB", "13")
BLOCK_TXS = 500  # transactions in each mined block, none of them ours (20 pages of 25)
FIRST_HEIGHT = 800_000
RECIPIENT = "2BygESGGedZ2UCjRAHdatCtXqh3LPb5otEdfYxKsFcd1"  # a valid key: the settings check it
IDLE_STATS = {
    "funded_txo_count": 0,
    "funded_txo_sum": 0,
    "spent_txo_count": 0,
    "spent_txo_sum": 0,
    "tx_count": 0,
}
# `flood` mode: this many new mempool transactions (strangers') before each pass, more than
# the block scan's MEMPOOL_BUDGET; `outage` mode: this many new blocks, more than its
# MAX_BLOCKS_PER_SCAN. Both made the block scan poll every address before issue 27.
FLOOD_TXS = 1500
OUTAGE_BLOCKS = 7
BLOCK_MODES = ("block", "outage", "flood", "tronblocks")
# `aged` mode: the n-th instruction was made n % AGED_SPAN seconds before the others began
# (about 5.7 a second at 10 000), and expires 30 minutes after it was made.
AGED_SPAN = 29 * 60
# `tronblocks` mode: Tron's block scan. Each block holds TRON_BLOCK_TXS transactions paying
# strangers (about mainnet's: two thirds TRX transfers, a third USDT transfer() calls, each
# shaped and sized like the node's), and TRON_PASS_BLOCKS blocks come before each pass
# (30 s of blocks at 3 s); the 19 blocks not solidified are read again by every pass.
TRON_BLOCK_TXS = 300
TRON_PASS_BLOCKS = 10
TRON_SOLID_DEPTH = 19
USDT_HEX = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"
# Seconds for one N's creation, and for its timed passes.
CHILD_TIMEOUT = int(os.environ.get("KERNODECK_BENCH_WATCHER_CHILD_TIMEOUT", 300))


# -- the loopback Esplora server (its own process: it must not share the watcher's GIL) ----


class _Chain:
    """Blocks of strangers' transactions; every address has an empty history."""

    def __init__(self):
        self.lock = threading.Lock()
        self.height = FIRST_HEIGHT
        self.requests = 0
        self.flood = 0  # a new set of `flood_txs` mempool transactions after each /_mine
        self.flood_txs = 0
        self.tron_blocks: dict[int, str] = {}  # number -> the block's JSON text
        self.tron_start_ms = int(time.time() * 1000) - 6 * 3600 * 1000

    def flood_txid(self, n: int) -> str:
        # Unique in its first 8 bytes: the block scan remembers the mempool by them.
        return f"{self.flood * FLOOD_TXS + n:016x}" + "0" * 48

    def block_hash(self, height: int) -> str:
        if height == 0:  # the adapter checks the chain by its genesis block: mainnet's
            return "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
        return f"{height:064x}"

    def tx(self, height: int, index: int) -> dict:
        return {
            "txid": f"{height:032x}{index:032x}",
            "version": 2,
            "locktime": 0,
            "vin": [],
            "vout": [{"scriptpubkey_address": f"bc1qstranger{index:030d}", "value": 10_000}],
        }

    def answer(self, path: str):
        with self.lock:
            self.requests += 1
            height = self.height
        if path == "/_count":
            return 200, {"requests": self.requests, "height": height}
        if match := re.fullmatch(r"/_mine\?blocks=(\d+)&flood=(\d+)", path):
            with self.lock:
                self.height += int(match[1])
                self.flood += 1
                self.flood_txs = int(match[2])
            return 200, {"height": self.height}
        path = path.split("?", 1)[0]  # TronGrid's lists take their options in the query
        if re.fullmatch(r"/v1/accounts/T[1-9A-HJ-NP-Za-km-z]{33}/transactions(/trc20)?", path):
            return 200, {"data": [], "success": True, "meta": {"at": 0, "page_size": 0}}
        if path == "/blocks/tip/height":
            return 200, str(height)
        if path == "/blocks/tip/hash":
            return 200, self.block_hash(height)
        if path == "/mempool/txids":
            return 200, [self.flood_txid(n) for n in range(self.flood_txs)]
        if match := re.fullmatch(r"/tx/([0-9a-f]{64})", path):
            tx = self.tx(0, int(match[1][:16], 16) % FLOOD_TXS)
            return 200, {**tx, "txid": match[1], "status": {"confirmed": False}}
        if match := re.fullmatch(r"/block-height/(\d+)", path):
            wanted = int(match[1])
            return (200, self.block_hash(wanted)) if wanted <= height else (404, "not found")
        if match := re.fullmatch(r"/block/([0-9a-f]{64})(/txs/(\d+))?", path):
            number = int(match[1], 16)
            if number > height:
                return 404, "Block not found"
            if match[2] is None:
                return 200, {
                    "id": match[1],
                    "height": number,
                    "timestamp": int(time.time()) - (height - number) * 600,
                    "tx_count": BLOCK_TXS,
                }
            start = int(match[3])
            return 200, [self.tx(number, i) for i in range(start, min(start + 25, BLOCK_TXS))]
        if re.fullmatch(r"/address/[0-9a-z]+/txs", path):
            return 200, []
        if match := re.fullmatch(r"/address/([0-9a-z]+)", path):
            return 200, {
                "address": match[1],
                "chain_stats": IDLE_STATS,
                "mempool_stats": IDLE_STATS,
            }
        return 404, f"no route for {path}"

    def tron(self, path: str, call: dict) -> dict | str:
        """TronGrid's node API: the head and the solidified head (19 blocks below), blocks
        (getblockbylimitnext, endNum exclusive, at most 100), no transaction infos."""
        with self.lock:
            self.requests += 1
            height = self.height
        if path == "/wallet/getblockbylimitnext":
            numbers = range(call["startNum"], min(call["endNum"], height + 1))
            if len(range(call["startNum"], call["endNum"])) > 100:
                return {"Error": "class java.lang.Exception : too many blocks"}
            return '{"block": [' + ",".join(self.tron_block(n) for n in numbers) + "]}"
        if path == "/wallet/gettransactioninfobyid":
            return {}
        if path not in ("/wallet/getnowblock", "/walletsolidity/getnowblock"):
            return {"Error": f"no route for {path}"}
        number = height if path == "/wallet/getnowblock" else height - TRON_SOLID_DEPTH
        moment = int(time.time() * 1000) - (height - number) * 3000
        return {"block_header": {"raw_data": {"number": number, "timestamp": moment}}}

    def tron_block_id(self, number: int) -> str:
        return f"{number:016x}" + f"{number * 7919:048x}"[-48:]

    def tron_block(self, number: int) -> str:
        """Block `number`'s JSON, made once: TRON_BLOCK_TXS transactions to strangers."""
        with self.lock:
            if number in self.tron_blocks:
                return self.tron_blocks[number]
        moment = self.tron_start_ms + (number - FIRST_HEIGHT) * 3000
        txs = []
        for index in range(TRON_BLOCK_TXS):
            stranger = f"41{10**12 + number * TRON_BLOCK_TXS + index:040x}"
            if index % 3 == 2:
                kind, value = (
                    "TriggerSmartContract",
                    {
                        "data": "a9059cbb" + stranger[2:].rjust(64, "0") + f"{5_000_000:064x}",
                        "owner_address": "41458437be39f3a8bfdbfee7bef93e2c5f632ceff4",
                        "contract_address": USDT_HEX,
                    },
                )
            else:
                kind, value = (
                    "TransferContract",
                    {
                        "amount": 1_000_000 + index,
                        "owner_address": "41458437be39f3a8bfdbfee7bef93e2c5f632ceff4",
                        "to_address": stranger,
                    },
                )
            txs.append(
                {
                    "ret": [{"contractRet": "SUCCESS"}],
                    "signature": ["5e" * 65],
                    "txID": f"{number:032x}{index:032x}",
                    "raw_data": {
                        "contract": [
                            {
                                "parameter": {
                                    "value": value,
                                    "type_url": f"type.googleapis.com/protocol.{kind}",
                                },
                                "type": kind,
                            }
                        ],
                        "ref_block_bytes": "3b08",
                        "ref_block_hash": "68ca0d471db52d6f",
                        "expiration": moment + 60_000,
                        "timestamp": moment - 1000,
                    },
                    "raw_data_hex": "0a" * 170,
                }
            )
        block = {
            "blockID": self.tron_block_id(number),
            "block_header": {
                "raw_data": {
                    "number": number,
                    "txTrieRoot": "f8" * 32,
                    "witness_address": "41e7860196ad5b5718c1d6326babab039b70b8c1cd",
                    "parentHash": self.tron_block_id(number - 1),
                    "version": 34,
                    "timestamp": moment,
                },
                "witness_signature": "55" * 65,
            },
            "transactions": txs,
        }
        text = json.dumps(block)
        with self.lock:
            self.tron_blocks[number] = text
        return text

    def signature(self, height: int) -> str:
        return "S" + str(height).replace("0", "z").rjust(80, "1")

    def rpc(self, call: dict) -> dict:
        """Solana JSON-RPC: one signature per block touches the recipient (no lamports)."""
        with self.lock:
            self.requests += 1
            height = self.height
        method, params = call["method"], call["params"]
        if method == "getSlot":
            result = height
        elif method == "getSignaturesForAddress" and params[0] == RECIPIENT:
            options = params[1]
            newest = height
            if "before" in options:
                newest = self.slot_of(options["before"]) - 1
            oldest = self.slot_of(options["until"]) + 1 if "until" in options else FIRST_HEIGHT
            slots = range(newest, max(oldest, newest - options["limit"] + 1) - 1, -1)
            result = [
                {
                    "signature": self.signature(slot),
                    "slot": slot,
                    "err": None,
                    "memo": None,
                    "blockTime": int(time.time()),
                    "confirmationStatus": "finalized",
                }
                for slot in slots
            ]
        elif method == "getSignaturesForAddress":
            result = []
        elif method == "getTransaction":
            keys = ["GWFQp9mjJep2jhtZ7nvttEmkRYLRwEDxWGxurademQ46", RECIPIENT]
            result = {
                "slot": self.slot_of(params[0]),
                "blockTime": int(time.time()),
                "transaction": {"message": {"accountKeys": keys}},
                "meta": {"err": None, "preBalances": [10, 5], "postBalances": [9, 5]},
            }
        else:
            return {"jsonrpc": "2.0", "id": call["id"], "error": {"code": -32601}}
        return {"jsonrpc": "2.0", "id": call["id"], "result": result}

    def slot_of(self, signature: str) -> int:
        return int(signature[1:].lstrip("1").replace("z", "0"))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection per client thread
    disable_nagle_algorithm = True  # headers and body leave at once, no 40 ms ACK wait
    chain: _Chain

    def do_GET(self):
        status, body = self.chain.answer(self.path)
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        kind = "text/plain" if isinstance(body, str) else "application/json"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        call = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.startswith(("/wallet/", "/walletsolidity/")):
            answer = self.chain.tron(self.path, call)
            data = (answer if isinstance(answer, str) else json.dumps(answer)).encode()
        else:
            data = json.dumps(self.chain.rpc(call)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass


def serve_esplora(port_file: str) -> None:
    _Handler.chain = _Chain()
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


# -- one child process per N: create, mine, time one pass ------------------------------------


def child_create(intents: int, network: str = "bitcoin") -> None:
    import django

    django.setup()
    from django.db import connection

    from kernodeck.payments import watching

    _bulk_create_intents(intents, network)
    with connection.cursor() as cursor:
        # Statistics, as autovacuum keeps them in a real database (a bulk insert outruns it).
        cursor.execute("ANALYZE payments_paymentintent")
    # New intents are polled once by the next pass (block scan: a mempool transaction may
    # have been read before they existed; polling: their cursors start): that pass is not
    # the steady state measured. Tron's block scan reads the blocks of its restart (200
    # before the solidified head) in the pass after its first.
    watching.watch_network(network)
    if network == "tron" and os.environ.get("KERNODECK_WATCH_BLOCK_SCAN") == "on":
        watching.watch_network(network)


def child_pass(
    intents: int, esplora_url: str, repeat: int, network: str = "bitcoin", blocks: int = 1
) -> None:
    """Mine a block and time a pass, `repeat` times; the median pass is reported (a process
    of its own: its peak RSS is the passes')."""
    import django

    django.setup()
    import httpx
    from django.db import connection

    from kernodeck.payments import watching

    statements = []

    def count(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    runs = []
    for _ in range(repeat):
        flood = FLOOD_TXS if os.environ.get("KERNODECK_BENCH_WATCHER_FLOOD") == "1" else 0
        httpx.get(f"{esplora_url}/_mine", params={"blocks": str(blocks), "flood": str(flood)})
        before = httpx.get(f"{esplora_url}/_count").json()["requests"]
        statements.clear()
        with connection.execute_wrapper(count):
            began, cpu = time.perf_counter(), time.process_time()
            report = watching.watch_network(network)
            seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        after = httpx.get(f"{esplora_url}/_count").json()["requests"]
        assert "error" not in report, report
        assert report.get("watched", intents) == intents, report
        mode = report.get("mode", "")
        runs.append((seconds, after - before - 1, len(statements), mode, cpu))
    seconds, http, sql, mode, cpu = sorted(runs)[len(runs) // 2]  # the median pass
    print(
        json.dumps(
            {
                "intents": intents,
                "seconds": seconds,
                "all_seconds": [run[0] for run in runs],
                "cpu_seconds": cpu,  # the watcher process's CPU in that pass
                "http": http,
                "sql": sql,
                "mode": mode,  # a block scan's: "blocks", or "addresses" where it fell back
                "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "report": report,
            }
        )
    )


def _bench_address(network: str, n: int) -> str:
    """The n-th bench instruction's address: bech32-looking on Bitcoin, a valid base58check
    one on Tron (the adapter decodes each)."""
    if network == "tron":
        from bip_utils import Base58Encoder

        return Base58Encoder.CheckEncode(b"\x41" + n.to_bytes(20, "big"))
    return f"bc1qbench{n:030d}"


def _bulk_create_intents(wanted: int, network: str = "bitcoin") -> None:
    """Open BTC (or SOL, by reference to one recipient) top-up instructions up to
    `wanted`, made in bulk (the services would take minutes for 20 000, and the pass is
    what is measured)."""
    from datetime import timedelta
    from decimal import Decimal

    from kernodeck.accounts.models import User
    from kernodeck.core import clock
    from kernodeck.ledger.models import TopUp
    from kernodeck.payments.models import PaymentIntent, PaymentMethod
    from kernodeck.payments.services import payment_methods_ensure

    payment_methods_ensure()
    have = PaymentIntent.objects.count()
    if have >= wanted:
        return
    owner = User.objects.filter(email="watcher-bench@kernodeck.test").first()
    if owner is None:
        owner = User.objects.create_user("watcher-bench@kernodeck.test", None)
    solana = network == "solana"
    code = {"solana": "sol-solana", "tron": "trx-tron"}.get(network, "btc-bitcoin")
    method = PaymentMethod.objects.get(code=code)
    now = clock.now()
    aged = os.environ.get("KERNODECK_BENCH_WATCHER_AGED") == "1"

    def made(n: int):
        return now - timedelta(seconds=n % AGED_SPAN) if aged else now

    for start in range(have, wanted, 2000):
        numbers = range(start, min(start + 2000, wanted))
        topups = TopUp.objects.bulk_create(
            TopUp(account=owner, amount_usd=Decimal(100), created_at=now) for _ in numbers
        )
        PaymentIntent.objects.bulk_create(
            PaymentIntent(
                purpose="topup",
                topup=topup,
                owner=owner,
                method=method,
                chain=network,
                address=RECIPIENT if solana else _bench_address(network, n),
                solana_reference=f"BenchRef{n:036d}" if solana else None,
                wallet_fingerprint="bench",
                derivation_index=n,
                amount_base=Decimal(103_093 + n),
                amount_usd=Decimal(100),
                rate_usd_per_coin=Decimal(97_000),
                rate_source="bench",
                rate_fetched_at=now,
                uri=f"bitcoin:bc1qbench{n:030d}",
                created_at=made(n),
                expires_at=made(n) + timedelta(minutes=30),
                monitor_until=now + timedelta(days=1),
            )
            for n, topup in zip(numbers, topups, strict=True)
        )


# -- the parent: database, server, one child per mode and N, the table -----------------------


def environment(esplora_url: str, mode: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNODECK_")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(ROOT),
            "KERNODECK_SECRET_KEY": "bench-" + "k" * 60,
            "KERNODECK_DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DATABASE}",
            "KERNODECK_REDIS_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
            "KERNODECK_VAR_DIR": tempfile.mkdtemp(prefix="kernodeck-bench-watcher-"),
            "KERNODECK_LOG_LEVEL": "WARNING",
            "KERNODECK_BITCOIN_ESPLORA_URL": esplora_url,
            "KERNODECK_LITECOIN_ESPLORA_URL": "",
            "KERNODECK_ETHEREUM_RPC_URL": "",
            "KERNODECK_TRON_API_URL": esplora_url if mode in ("tron", "tronblocks") else "",
            "KERNODECK_SOLANA_RPC_URL": esplora_url if mode == "solana" else "",
            "KERNODECK_SOLANA_RECIPIENT": RECIPIENT,
            "KERNODECK_WATCH_BLOCK_SCAN": "on" if mode in BLOCK_MODES else "off",
            "KERNODECK_BENCH_WATCHER_FLOOD": "1" if mode == "flood" else "0",
            "KERNODECK_BENCH_WATCHER_AGED": "1" if mode == "aged" else "0",
        }
    )
    return env


def prepare_database(env: dict[str, str]) -> None:
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"]
    subprocess.run([*psql, f"DROP DATABASE IF EXISTS {DATABASE}"], env=env, check=True)
    subprocess.run([*psql, f"CREATE DATABASE {DATABASE}"], env=env, check=True)
    subprocess.run(
        ["redis-cli", "-n", REDIS_DB, "FLUSHDB"], env=env, check=True, stdout=subprocess.DEVNULL
    )
    subprocess.run(
        [str(PYTHON), "-m", "kernodeck", "migrate", "-v", "0"], env=env, cwd=ROOT, check=True
    )


def run_child(env: dict[str, str], *args: str) -> dict | None:
    out = subprocess.run(
        [str(PYTHON), __file__, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
    )
    if out.returncode:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-3000:]}")
    lines = out.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else None


def measure(
    env: dict[str, str], intents: int, esplora_url: str, repeat: int = 1, mode: str = "block"
) -> dict:
    network = {"solana": "solana", "tron": "tron", "tronblocks": "tron"}.get(mode, "bitcoin")
    blocks = {"outage": OUTAGE_BLOCKS, "tronblocks": TRON_PASS_BLOCKS}.get(mode, 1)
    run_child(env, "--create", str(intents), network)
    return run_child(env, "--pass", str(intents), esplora_url, str(repeat), network, str(blocks))


def start_esplora() -> tuple[subprocess.Popen, str]:
    port_file = Path(tempfile.mkdtemp(prefix="kernodeck-esplora-")) / "port"
    server = subprocess.Popen([str(PYTHON), __file__, "--serve-esplora", str(port_file)])
    for _ in range(100):
        if port_file.exists() and port_file.read_text():
            return server, f"http://127.0.0.1:{port_file.read_text()}"
        time.sleep(0.05)
    server.kill()
    raise RuntimeError("the loopback Esplora server did not start")


def table(mode: str, rows: list[dict]) -> str:
    lines = [
        f"mode: {mode}",
        "| open intents | pass s (median) | its CPU s | HTTP requests | SQL statements "
        "| peak RSS MiB | pass |",
        "|-------------:|----------------:|----------:|--------------:|---------------:"
        "|-------------:|------|",
    ]
    for row in rows:
        lines.append(
            f"| {row['intents']:>12,} | {row['seconds']:>15.3f} | {row['cpu_seconds']:>9.3f} "
            f"| {row['http']:>13,} | {row['sql']:>14,} | {row['rss_mib']:>12.0f} "
            f"| {row['mode'] or '-'} |"
        )
    by_n = {row["intents"]: row["seconds"] for row in rows}
    doublings = [
        f"{n:,} -> {2 * n:,}: {100 * (by_n[2 * n] / by_n[n] - 1):+.0f} %"
        for n in sorted(by_n)
        if 2 * n in by_n and by_n[n] > 0
    ]
    if doublings:
        lines.append("doubling the open intents adds: " + "; ".join(doublings))
    return "\n".join(lines)


def report(argv: list[str]) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--intents", type=int, nargs="+", default=[1000, 10000, 20000])
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per N (median)")
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=["address", "aged", "block", "outage", "flood", "solana", "tron", "tronblocks"],
        default=["address", "aged", "block", "outage", "flood", "solana", "tron", "tronblocks"],
    )
    args = parser.parse_args(argv)
    server, url = start_esplora()
    try:
        load = " ".join(f"{value:.2f}" for value in os.getloadavg())
        sections = [
            f"machine: {os.cpu_count()} cores, load average at start {load}; "
            "loopback Esplora (and Solana RPC) in its own process"
        ]
        for mode in args.modes:
            env = environment(url, mode)
            prepare_database(env)
            measure(env, 0, url, mode=mode)  # the first pass: the chain's state, cursors
            rows = [measure(env, n, url, args.repeat, mode) for n in sorted(args.intents)]
            load = " ".join(f"{value:.2f}" for value in os.getloadavg())
            sections.append(table(mode, rows) + f"\nload average after the mode: {load}")
        return "\n\n".join(sections)
    finally:
        server.terminate()
        server.wait(10)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve-esplora":
        serve_esplora(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "--create":
        child_create(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "--pass":
        child_pass(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5], int(sys.argv[6]))
    else:
        print(report(sys.argv[1:]))


if __name__ == "__main__":
    main()
