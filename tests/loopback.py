"""A real HTTP server on 127.0.0.1 that replays canned answers, for adapter tests.

Adapters are tested over real sockets with their real HTTP client, never with a mocked one:

    with LoopbackServer() as server:
        server.route("GET", "/0/public/Ticker", json_body={"error": [], "result": {}})
        server.route("GET", "/flaky", Reply(status=500), Reply(json_body={"ok": True}))
        server.route("POST", "/", handler=lambda request: (200, {}, {"result": "0x1"}))
        KrakenProvider(base_url=server.url).fetch(["BTC"])
        server.requests[0].query["pair"]

Routes match on method and path; the query string is recorded, not matched. A route given
several replies answers them in turn and repeats the last. `Reply(drip=0.5)` sends its body
one byte every half second (an API that holds a connection without ever timing a read out).
An unknown route answers 404, or
goes to the handler given to `otherwise(handler)` (a whole fake API, e.g. a chain serving
blocks and addresses: tests/payments/esplora_chain.py).
`sample()` reads an API answer from tests/samples: the project's own data, written in the
shapes the providers document (see tests/samples/README.md). Nothing outside the repository.

A handler runs in the server's thread: an exception there (an `assert`, a missing sample,
even a `pytest.skip`) cannot reach the test. It is recorded in `handler_errors` and answered
500, and leaving the `with` block (or `close()`) raises HandlerError naming it, in the test's
own thread. A test that provokes handler errors on purpose calls `take_handler_errors()`.
"""

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"

_NO_JSON = object()


@dataclass(frozen=True)
class Request:
    """One request as the server received it. Header names are lower-case."""

    method: str
    path: str
    query: dict[str, str]  # the last value wins when a name repeats; see raw_query
    raw_query: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


# handler(request) -> (status, headers, body); a body that is not bytes or str is sent as JSON.
Handler = Callable[[Request], tuple[int, Mapping[str, str], Any]]


@dataclass(frozen=True)
class Reply:
    """One canned answer: a status and a body (`json_body`, or `body` sent verbatim), or a
    `handler` that builds the answer from the request. `delay` waits before answering;
    `drip` sends the body one byte at a time, waiting that many seconds before each."""

    status: int = 200
    json_body: Any = _NO_JSON
    body: bytes | str | None = None
    content_type: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drip: float = 0.0
    handler: Handler | None = None

    def __post_init__(self):
        given = [self.json_body is not _NO_JSON, self.body is not None, self.handler is not None]
        if sum(given) > 1:
            raise ValueError("give one of json_body, body or handler")

    def render(self, request: Request) -> tuple[int, dict[str, str], bytes]:
        """Status, headers (with Content-Type) and body bytes for `request`."""
        if self.handler is not None:
            status, headers, body = self.handler(request)
            return (status, *_encode(body, None, dict(headers)))
        body = self.json_body if self.json_body is not _NO_JSON else (self.body or b"")
        return (self.status, *_encode(body, self.content_type, dict(self.headers)))


def _encode(body: Any, content_type: str | None, headers: dict[str, str]):
    if isinstance(body, str | bytes):
        default_type = "text/plain; charset=utf-8"
        data = body.encode() if isinstance(body, str) else body
    else:
        default_type = "application/json"
        data = json.dumps(body).encode()
    if not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = content_type or default_type
    return headers, data


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.0: one request per connection, so no handler thread waits on an idle keep-alive
    # connection and shutting down never blocks on a client.
    protocol_version = "HTTP/1.0"
    server: "_Server"

    def do_GET(self):
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def _serve(self):
        loopback = self.server.loopback
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = Request(
            method=self.command,
            path=split.path,
            query=dict(parse_qsl(split.query, keep_blank_values=True)),
            raw_query=split.query,
            headers={name.lower(): value for name, value in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
        )
        reply = loopback._reply_for(request)
        # Waiting on the closing event lets shutdown interrupt a long delay.
        if reply.delay and loopback._closing.wait(reply.delay):
            return
        try:
            status, headers, body = reply.render(request)
        except BaseException as error:  # pytest's skip and fail are BaseExceptions too
            loopback._record_handler_error(request, error)
            status, headers, body = 500, {"Content-Type": "text/plain"}, repr(error).encode()
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if not reply.drip:
                self.wfile.write(body)
            for position in range(len(body) if reply.drip else 0):
                self.wfile.flush()
                if loopback._closing.wait(reply.drip):
                    return
                self.wfile.write(body[position : position + 1])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (timeout tests): nobody to answer

    def log_message(self, format, *args):
        pass


class HandlerError(AssertionError):
    """A loopback handler failed in the server's thread; raised in the test's thread."""


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins the handler threads
    loopback: "LoopbackServer"


class LoopbackServer:
    """An HTTP server on 127.0.0.1 and a free port, answering from a table of routes."""

    def __init__(self):
        self._lock = threading.Lock()
        self._routes: dict[tuple[str, str], list[Reply]] = {}
        self._calls: dict[tuple[str, str], int] = {}
        self._requests: list[Request] = []
        self._otherwise: Handler | None = None
        self._closing = threading.Event()
        self.handler_errors: list[BaseException] = []
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.loopback = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"loopback-http-{self.port}",
            daemon=True,
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Request]:
        """The requests received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    def route(self, method: str, path: str, *replies: Reply, **reply) -> None:
        """Answer `method path` with `replies` in turn (the last repeats), or with one
        `Reply(**reply)`. Routing the same method and path again replaces it."""
        if replies and reply:
            raise TypeError("give Reply objects or Reply keyword arguments, not both")
        answers = list(replies) or [Reply(**reply)]
        key = (method.upper(), path)
        with self._lock:
            self._routes[key] = answers
            self._calls[key] = 0

    def otherwise(self, handler: Handler | None) -> None:
        """Answer requests no route matches with `handler(request)` instead of a 404."""
        with self._lock:
            self._otherwise = handler

    def take_handler_errors(self) -> list[BaseException]:
        """The handler errors so far, forgotten: for a test that provokes them on purpose."""
        with self._lock:
            errors, self.handler_errors[:] = list(self.handler_errors), []
            return errors

    def close(self) -> None:
        """Stop serving (joining the handler threads), then raise HandlerError if a handler
        failed: the test fails in its own thread, with the handler's error as the cause."""
        self._shut_down()
        self.check_handlers()

    def check_handlers(self) -> None:
        """Raise HandlerError if a handler failed since the last take_handler_errors()."""
        errors = self.take_handler_errors()
        if errors:
            described = "; ".join(f"{type(e).__name__}: {e}" for e in errors)
            raise HandlerError(
                f"{len(errors)} loopback handler error(s) (answered 500): {described}"
            ) from errors[0]

    def _shut_down(self) -> None:
        if self._closing.is_set():
            return
        self._closing.set()
        self._httpd.shutdown()
        self._thread.join()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.close()
        else:
            # The test already failed: its own error says more; keep any handler error on it.
            self._shut_down()
            if errors := self.take_handler_errors():
                exc.add_note(f"loopback handler error(s) too: {errors!r}")

    def _record_handler_error(self, request: Request, error: BaseException) -> None:
        error.add_note(f"while answering {request.method} {request.path}")
        with self._lock:
            self.handler_errors.append(error)

    def _reply_for(self, request: Request) -> Reply:
        key = (request.method, request.path)
        with self._lock:
            self._requests.append(request)
            answers = self._routes.get(key)
            if answers is None and self._otherwise is not None:
                return Reply(handler=self._otherwise)
            if answers is None:
                message = f"no route for {request.method} {request.path}"
                return Reply(status=404, json_body={"error": message})
            index = min(self._calls[key], len(answers) - 1)
            self._calls[key] += 1
            return answers[index]


def sample(path: str) -> dict:
    """An API answer of tests/samples, e.g. sample("prices/kraken-ticker.json"): the whole
    file, whose `response` is the body and `documentation` where its shape is documented
    (see tests/samples/README.md). A missing file is an error of the test, never a skip."""
    return json.loads((SAMPLES_DIR / path).read_text())


def sample_reply(path: str, **overrides) -> Reply:
    """The sample at `path` as a Reply: its status, content type, headers and response."""
    data = sample(path)
    content_type = data.get("content_type")
    response = data["response"]
    verbatim = isinstance(response, str) and "json" not in (content_type or "json")
    fields = {
        "status": data.get("http_status", 200),
        "content_type": content_type,
        "headers": data.get("headers", {}),
        **({"body": response} if verbatim else {"json_body": response}),
    }
    return Reply(**{**fields, **overrides})
