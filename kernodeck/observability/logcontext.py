"""What a log line knows about the work it comes from: the request id, the account, the
order, the task. Kept in context variables, so threads and tasks never mix them up."""

import contextvars
import re
import uuid

_request_id = contextvars.ContextVar("kernodeck_request_id", default="")
_request = contextvars.ContextVar("kernodeck_request", default=None)
_task = contextvars.ContextVar("kernodeck_task", default="")

# An X-Request-ID from the proxy in front is kept when it looks like an id, never as is.
INCOMING_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Tasks enqueued during a request carry its id in front of their own (queue.py).
TASK_ID_SEPARATOR = "~"


def request_id_choose(incoming: str | None) -> str:
    incoming = (incoming or "").strip()
    if INCOMING_ID.fullmatch(incoming) and TASK_ID_SEPARATOR not in incoming:
        return incoming
    return uuid.uuid4().hex


def bind(*, request_id: str, request=None, task: str = "") -> tuple:
    return (_request_id.set(request_id), _request.set(request), _task.set(task))


def unbind(tokens: tuple) -> None:
    request_token, request_obj_token, task_token = tokens
    _task.reset(task_token)
    _request.reset(request_obj_token)
    _request_id.reset(request_token)


def clear(**kwargs) -> None:
    """Forget the finished request (Django's request_finished signal)."""
    _request_id.set("")
    _request.set(None)
    _task.set("")


def request_id() -> str:
    return _request_id.get()


def current_request():
    return _request.get()


def task() -> str:
    return _task.get()


def user_id():
    """The signed-in account's id, if the request already loaded it (never a query)."""
    request = _request.get()
    user = getattr(request, "_cached_user", None) if request is not None else None
    if user is not None and getattr(user, "is_authenticated", False):
        return user.pk
    return None


def order_reference() -> str:
    """The order a request is about, when its URL names one."""
    request = _request.get()
    match = getattr(request, "resolver_match", None) if request is not None else None
    if match is None:
        return ""
    return str(match.kwargs.get("reference", ""))[:16]
