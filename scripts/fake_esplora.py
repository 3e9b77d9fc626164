"""A tiny Esplora look-alike on 127.0.0.1 for rehearsing the Bitcoin watcher in the demo.

    .venv/bin/python scripts/fake_esplora.py            # listens on http://127.0.0.1:3002
    KERNODECK_BITCOIN_ESPLORA_URL=http://127.0.0.1:3002 python3 dev.py demo

Then "send" a payment to an address shown on a payment page, and mine blocks:

    curl -X POST 'http://127.0.0.1:3002/_pay?address=bc1q…&sats=103093'
    curl -X POST 'http://127.0.0.1:3002/_mine?blocks=2'

It answers the two calls the adapter makes (/blocks/tip/height and /address/:addr/txs)
in the real API's shape. State lives in memory only.
"""

import json
import secrets
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

STATE = {"tip": 800_000, "txs": []}  # txs: dicts with txid, address, sats, height, time


def tx_json(tx):
    status = {"confirmed": False}
    if tx["height"] is not None:
        status = {
            "confirmed": True,
            "block_height": tx["height"],
            "block_hash": "00" * 32,
            "block_time": tx["time"],
        }
    return {
        "txid": tx["txid"],
        "version": 2,
        "locktime": 0,
        "vin": [],
        "vout": [
            {
                "scriptpubkey": "",
                "scriptpubkey_type": "v0_p2wpkh",
                "scriptpubkey_address": tx["address"],
                "value": tx["sats"],
            }
        ],
        "status": status,
    }


class Handler(BaseHTTPRequestHandler):
    def _send(self, status, body, content_type="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = urlsplit(self.path).path
        if path == "/blocks/tip/height":
            return self._send(200, str(STATE["tip"]), "text/plain")
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "address" and parts[2] == "txs":
            txs = [tx_json(t) for t in reversed(STATE["txs"]) if t["address"] == parts[1]]
            return self._send(200, txs)
        if len(parts) == 5 and parts[0] == "address" and parts[2:4] == ["txs", "chain"]:
            return self._send(200, [])
        return self._send(404, "not found", "text/plain")

    def do_POST(self):
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/_pay":
            tx = {
                "txid": secrets.token_hex(32),
                "address": query["address"],
                "sats": int(query["sats"]),
                "height": None,
                "time": None,
            }
            STATE["txs"].append(tx)
            return self._send(200, {"txid": tx["txid"]})
        if url.path == "/_mine":
            for _ in range(int(query.get("blocks", 1))):
                STATE["tip"] += 1
                for tx in STATE["txs"]:
                    if tx["height"] is None:
                        tx["height"], tx["time"] = STATE["tip"], int(time.time())
            return self._send(200, {"tip": STATE["tip"]})
        return self._send(404, "not found", "text/plain")

    def log_message(self, format, *args):
        sys.stderr.write("fake-esplora: " + format % args + "\n")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 3002
    print(f"fake Esplora on http://127.0.0.1:{port}")
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
