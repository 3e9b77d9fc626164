"""The chain adapters' HTTP: JSON GET/POST with a timeout and a few retries, errors as ChainError.

    new_client() -> httpx.Client
    get_json(url, *, params=None, headers=None, timeout=10.0, sleep=time.sleep, client=None) -> Any
    get_text(url, *, params=None, headers=None, timeout=10.0, sleep=time.sleep, client=None) -> str
    post_json(url, payload, *, headers=None, timeout=10.0, sleep=time.sleep, client=None) -> Any
    rpc_call(url, method, params, *, headers=None, timeout=10.0, sleep=time.sleep, client=None)
        -> Any  (the JSON-RPC 2.0 `result`, which may be None)

Every call makes at most ATTEMPTS tries. A connection error, a timeout, HTTP 429, HTTP 5xx, a
body that is not JSON (a proxy's error page) and a JSON-RPC server error are retried after
BACKOFF seconds, doubled each time, or after the server's Retry-After when it asks for at most
MAX_RETRY_AFTER seconds (a longer wait fails at once: the watcher's next run is the retry).
Other 4xx answers and JSON-RPC caller errors (-32700, -32600, -32601, -32602) fail at once.
Numbers with a fraction or exponent parse as Decimal, never float; integers stay int.
An answer larger than MAX_BODY_BYTES (after decompression) or nested deeper than MAX_DEPTH
is refused as a ChainError at once: no chain API answers that, and neither may exhaust the
watcher's memory or stack.
`timeout` bounds each attempt's whole answer, not each read: an API that drips one byte
every half second fails the attempt once `timeout` seconds have passed since it began
(the clock is read after every chunk; a read that blocks waits at most what is left, so an
attempt never lasts more than twice `timeout`). Pass `client` (from new_client()) to reuse
connections across the calls of one scan; without it each call opens and closes its own.

    pass_deadline(seconds)  (a context manager)

bounds every call made inside it, on its thread and on the threads each_concurrently
starts, by one deadline for them all (a network's pass: watching.watch_network_isolated):
an attempt gets at most what is left of it, no retry waits past it, and a call made after
it fails at once (ChainError), so a slow or hung API holds its own network's pass at most
that long. Nested deadlines keep the earlier one.
Error messages name the host only: RPC URLs often carry an API key in the path or query.

    each_concurrently(fetch, items, *, workers) -> list  (fetch(item) for each, in order)

runs an adapter's per-address requests on at most `workers` threads sharing one client
(httpx's client is thread-safe); the first failure is raised and what has not started yet
is cancelled.
"""

import contextlib
import contextvars
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx

from kernodeck.core import tls
from kernodeck.payments.chains.base import ChainError

ATTEMPTS = 3
BACKOFF = 0.5  # seconds before the second attempt; doubled before each later one
MAX_RETRY_AFTER = 10.0  # seconds: a Retry-After up to this is waited for, a longer one fails
USER_AGENT = "Kernodeck chain watcher"
MAX_BODY_BYTES = 16 * 1024 * 1024  # a full Ethereum block with its transactions is ~1-2 MiB
MAX_DEPTH = 32  # arrays/objects inside each other; real answers nest fewer than 10 deep
DEFAULT_TIMEOUT = 10.0

# JSON-RPC codes that mean the request itself is wrong: asking again cannot help.
RPC_CALLER_ERRORS = frozenset({-32700, -32600, -32601, -32602})

Sleep = Callable[[float], None]

# time.monotonic() past which no call of the current pass may run (None: no pass deadline).
_PASS_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "chain_pass_deadline", default=None
)


class AnswerTooLarge(ChainError):
    """The answer was larger than MAX_BODY_BYTES (a caller that asked for a range may ask
    for less)."""


class DeadlinePassed(ChainError):
    """The pass's deadline came before this call could be (fully) answered."""


@contextlib.contextmanager
def pass_deadline(seconds: float) -> Iterator[None]:
    """Every call inside (on this thread and each_concurrently's) ends `seconds` from now."""
    deadline = time.monotonic() + seconds
    outer = _PASS_DEADLINE.get()
    token = _PASS_DEADLINE.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _PASS_DEADLINE.reset(token)


def _pass_left() -> float | None:
    """Seconds left before the pass's deadline (None without one; 0 or less once passed)."""
    deadline = _PASS_DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


class _Transient(Exception):
    """This attempt failed in a way another attempt may not; `wait` overrides the backoff."""

    def __init__(self, message: str, wait: float | None = None):
        super().__init__(message)
        self.wait = wait


def new_client() -> httpx.Client:
    """A client for several calls in a row; the caller closes it (`with new_client() as c:`)."""
    return httpx.Client(
        follow_redirects=False, headers={"User-Agent": USER_AGENT}, verify=tls.client_context()
    )


def each_concurrently(fetch: Callable[[Any], Any], items: Sequence, *, workers: int) -> list:
    """fetch(item) for every item, at most `workers` at a time, results in the items' order.

    The first exception (in the items' order) is raised once the calls already running have
    ended; the calls not started yet are cancelled."""
    if workers <= 1 or len(items) <= 1:
        return [fetch(item) for item in items]
    with ThreadPoolExecutor(
        max_workers=min(workers, len(items)), thread_name_prefix="chain-fetch"
    ) as pool:
        # Each call runs in a copy of this context: the pass's deadline goes with it.
        futures = [pool.submit(contextvars.copy_context().run, fetch, item) for item in items]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def get_json(
    url: str,
    *,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    sleep: Sleep = time.sleep,
    client: httpx.Client | None = None,
) -> Any:
    """GET `url` and return its body parsed as JSON."""
    request = {"params": params, "headers": {"Accept": "application/json", **(headers or {})}}
    return _with_retries(
        "GET", url, request, _parse_json, timeout=timeout, sleep=sleep, client=client
    )


def get_text(
    url: str,
    *,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    sleep: Sleep = time.sleep,
    client: httpx.Client | None = None,
) -> str:
    """GET `url` and return its body as text, stripped (e.g. Esplora's tip height)."""
    request = {"params": params, "headers": dict(headers or {})}
    return _with_retries(
        "GET",
        url,
        request,
        lambda response: response.text.strip(),
        timeout=timeout,
        sleep=sleep,
        client=client,
    )


def post_json(
    url: str,
    payload: Any,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    sleep: Sleep = time.sleep,
    client: httpx.Client | None = None,
) -> Any:
    """POST `payload` as JSON to `url` and return the answer parsed as JSON."""
    request = {
        "content": json.dumps(payload).encode(),
        "headers": {
            "Accept": "application/json",
            "Content-Type": "application/json",
            **(headers or {}),
        },
    }
    return _with_retries(
        "POST", url, request, _parse_json, timeout=timeout, sleep=sleep, client=client
    )


def rpc_call(
    url: str,
    method: str,
    params: list | dict | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    sleep: Sleep = time.sleep,
    client: httpx.Client | None = None,
) -> Any:
    """One JSON-RPC 2.0 call; its `result` (None included), or ChainError for an `error`."""
    payload = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}
    request = {
        "content": json.dumps(payload).encode(),
        "headers": {
            "Accept": "application/json",
            "Content-Type": "application/json",
            **(headers or {}),
        },
    }

    def parse(response: httpx.Response) -> Any:
        body = _parse_json(response)
        if not isinstance(body, dict):
            raise _Transient(f"{method}: answer is not a JSON-RPC object")
        error = body.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            message = error.get("message") if isinstance(error, dict) else error
            text = f"{method}: JSON-RPC error {code}: {message}"
            if code in RPC_CALLER_ERRORS:
                raise ChainError(text)
            raise _Transient(text)
        if "result" not in body:
            raise _Transient(f"{method}: answer has neither result nor error")
        return body["result"]

    return _with_retries("POST", url, request, parse, timeout=timeout, sleep=sleep, client=client)


def _with_retries(
    method: str,
    url: str,
    request: dict,
    parse: Callable[[httpx.Response], Any],
    *,
    timeout: float,
    sleep: Sleep,
    client: httpx.Client | None,
) -> Any:
    """Send, check the status, parse; up to ATTEMPTS times while the failure is transient."""
    host = _host(url)
    delay = BACKOFF
    for attempt in range(1, ATTEMPTS + 1):
        left = _pass_left()
        if left is not None and left <= 0:
            raise DeadlinePassed(f"{host}: the pass's deadline has passed; not asked")
        bound = timeout if left is None else min(timeout, left)
        try:
            response = _send(method, url, request, timeout=bound, client=client)
            _check_status(response)
            return parse(response)
        except _Transient as failure:
            left = _pass_left()
            if left is not None and left <= 0:
                raise DeadlinePassed(f"{host}: {failure}; the pass's deadline came") from failure
            if attempt == ATTEMPTS:
                message = f"{host}: {failure} (gave up after {ATTEMPTS} attempts)"
                raise ChainError(message) from failure
            if failure.wait is not None and failure.wait > MAX_RETRY_AFTER:
                raise ChainError(f"{host}: {failure}") from failure
            wait = failure.wait if failure.wait is not None else delay
            if left is not None and wait >= left:
                raise DeadlinePassed(f"{host}: {failure}; no time left to retry") from failure
            sleep(wait)
            delay *= 2
        except ChainError as failure:
            kind = AnswerTooLarge if isinstance(failure, AnswerTooLarge) else ChainError
            raise kind(f"{host}: {failure}") from failure
    raise AssertionError("unreachable")  # pragma: no cover


def _send(
    method: str, url: str, request: dict, *, timeout: float, client: httpx.Client | None
) -> httpx.Response:
    try:
        if client is not None:
            return _read_bounded(client, method, url, request, timeout)
        with new_client() as own:
            return _read_bounded(own, method, url, request, timeout)
    except httpx.TimeoutException as error:
        raise _Transient(f"timed out after {timeout:.3g} s ({type(error).__name__})") from error
    except httpx.UnsupportedProtocol as error:
        raise ChainError(f"the configured API URL is not http(s): {error}") from error
    except httpx.HTTPError as error:
        raise _Transient(f"request failed: {error or type(error).__name__}") from error
    except httpx.InvalidURL as error:
        raise ChainError("the configured API URL is not a valid URL") from error


def _read_bounded(
    client: httpx.Client, method: str, url: str, request: dict, timeout: float
) -> httpx.Response:
    """Send and read the (decoded) body, stopping past MAX_BODY_BYTES (a huge or
    decompression-bomb answer costs at most that much memory) and once `timeout` seconds
    have passed since sending (an answer dripped slowly is no answer)."""
    deadline = time.monotonic() + timeout
    sent = client.build_request(method, url, timeout=httpx.Timeout(timeout), **request)
    response = client.send(sent, stream=True)
    try:
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise AnswerTooLarge(f"answer is larger than {MAX_BODY_BYTES} bytes")
            if time.monotonic() > deadline:
                raise _Transient(
                    f"the whole answer took longer than {timeout:.3g} s ({len(body)} bytes read)"
                )
    finally:
        response.close()
    # The body is already decoded: the copy must not announce an encoding or a length.
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(response.status_code, headers=headers, content=bytes(body), request=sent)


def _check_status(response: httpx.Response) -> None:
    status = response.status_code
    if status == 429:
        wait = _retry_after(response)
        asks = f", asks to retry after {wait:g} s" if wait is not None else ""
        raise _Transient(f"rate limited (HTTP 429){asks}", wait=wait)
    if status >= 500:
        raise _Transient(f"HTTP {status}{_snippet(response)}")
    if not response.is_success:
        raise ChainError(f"HTTP {status}{_snippet(response)}")


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds when given as a number (the HTTP-date form is ignored)."""
    value = response.headers.get("retry-after", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return max(seconds, 0.0) if seconds == seconds else None  # NaN is no answer


def _snippet(response: httpx.Response) -> str:
    """The start of a short text error body (Esplora answers 'Invalid Bitcoin address')."""
    text = " ".join(response.text.split())[:120]
    return f": {text}" if text and "<" not in text else ""


def _parse_json(response: httpx.Response) -> Any:
    try:
        body = json.loads(response.text, parse_float=Decimal, parse_constant=_refuse_constant)
    except RecursionError:
        raise ChainError(f"answer is nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as error:
        raise _Transient("answer is not valid JSON") from error
    _check_depth(body)
    return body


def _check_depth(body: Any) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH, walking it without recursion."""
    level = [body]
    for _depth in range(MAX_DEPTH):
        inner = []
        for value in level:
            if isinstance(value, dict):
                inner.extend(value.values())
            elif isinstance(value, list):
                inner.extend(value)
        if not inner:
            return
        level = inner
    raise ChainError(f"answer is nested more than {MAX_DEPTH} levels deep")


def _refuse_constant(name: str) -> None:
    """NaN and Infinity are not JSON; Python's parser accepts them unless told otherwise."""
    raise ValueError(f"{name} is not a JSON value")


def _host(url: str) -> str:
    """host[:port] of `url`, without the user info, path or query that may hold a key."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "chain API"
    if not parsed.host:
        return "chain API"
    return f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host
