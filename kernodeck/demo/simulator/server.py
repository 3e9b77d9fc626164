"""The simulator's HTTP server: routes each path to its chain's API or the control API.

One request per connection on a threading server over one `ChainSimulator`; `main` is the
process `kernodeck demo` starts (python -m kernodeck.demo.simulator), which writes its port
to the port file and stops on SIGTERM or SIGINT.
"""

import argparse
import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kernodeck.demo.simulator.control import ChainSimulator
from kernodeck.demo.simulator.core import ControlError, rpc_error

MAX_BODY = 16 * 1024  # bytes of a request body; the control API's are a few hundred


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: shutdown never waits on one
    server: "SimulatorServer"

    def do_GET(self):
        simulator = self.server.simulator
        split = urlsplit(self.path)
        path, query = split.path, dict(parse_qsl(split.query))
        for network in ("bitcoin", "litecoin"):
            prefix = f"/{network}/api/"
            if path.startswith(prefix):
                return self._send(*simulator.esplora(network, path[len(prefix) :]))
        if path.startswith("/tron/"):
            return self._send(*simulator.tron_get(path[len("/tron") :], query))
        if path == "/_control/state":
            return self._send(200, simulator.summary())
        return self._send(404, "Not Found")

    def do_POST(self):
        simulator = self.server.simulator
        length = self.headers.get("Content-Length", "0")
        if not length.isdigit() or int(length) > MAX_BODY:
            return self._send(413, {"error": f"the body must be at most {MAX_BODY} bytes"})
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            if self.path in ("/ethereum", "/solana"):
                return self._send(200, rpc_error(None, -32700, "Parse error"))
            return self._send(400, {"error": "the body is not JSON"})
        path = urlsplit(self.path).path
        if path in ("/ethereum", "/solana"):
            return self._send(200, simulator.rpc(path[1:], body))
        if path.startswith("/tron/"):
            return self._send(*simulator.tron_post(path[len("/tron") :], body))
        control = {"/_control/pay": simulator.pay, "/_control/mine": simulator.mine}
        if path in control:
            try:
                return self._send(200, control[path](body))
            except ControlError as error:
                return self._send(400, {"error": str(error)})
        return self._send(404, "Not Found")

    def _send(self, status: int, body: Any) -> None:
        if isinstance(body, str):
            data, content_type = body.encode(), "text/plain"
        else:
            data, content_type = json.dumps(body).encode(), "application/json"
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, format, *args):
        pass


class SimulatorServer(ThreadingHTTPServer):
    daemon_threads = True
    simulator: ChainSimulator


def make_server(state_path: Path, host: str = "127.0.0.1", port: int = 0) -> SimulatorServer:
    """A server bound to host:port (0: a free port) over the state in `state_path`."""
    server = SimulatorServer((host, port), _Handler)
    server.simulator = ChainSimulator(state_path)
    with server.simulator.lock:
        server.simulator._save()
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Kernodeck's demo chain simulators")
    parser.add_argument("--state", type=Path, required=True, help="JSON file of the chains")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args(argv)
    server = make_server(options.state, options.host, options.port)
    temporary = options.port_file.with_suffix(".tmp")
    temporary.write_text(str(server.server_address[1]))
    os.replace(temporary, options.port_file)

    def stop(*_):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        options.port_file.unlink(missing_ok=True)
