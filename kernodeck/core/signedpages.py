"""Signed-in pages kept per process and sent again while the database has not changed.

A list an operator or a customer reloads (the desk, the review queue, the balance statement,
an order file) is a function of the rows it read, the account and its session, the path and
query string, the language, the time zone, the settings and the clock. A view opts in with
`@signed_page` (below its permission check, which still runs on every request): its answer
is kept in this process under a key made of all of these but the rows and the clock,
together with the PostgreSQL snapshot taken just before the view ran
(`pg_current_snapshot()`: the oldest running transaction, the next transaction id to be
given and the ones running). The next request with the same key takes the snapshot again,
one small statement; when it is the same, no transaction that wrote has begun or ended
since, so nothing the page read can read differently, and the stored body is sent with the
request's own CSRF token in place of a placeholder, as core/pagecache.py does for public
pages. A snapshot taken before the view is the safe order: a write committed while the view
ran leaves the copy under an older snapshot than the next request's, so it is rendered again.

The clock: a copy is used for at most KERNODECK_SIGNED_PAGE_SECONDS (5 by default, 0 under
KERNODECK_DEBUG: off), by the project clock, so what a page derives from the time alone (a
relative time such as "3 minutes ago", a hold that lapses without any write) shows at most
that late. A clock set back makes every copy stale.

Not used (the view runs as without it): on SQLite (no snapshot to compare), inside an
atomic block or with autocommit off (a transaction's own writes do not move the snapshot),
for anything but GET and HEAD, for an anonymous visitor, and while messages wait to be
shown. Kept only: a 200, not streaming, that set no cookie, left the session unchanged and
queued no message, and that the view did not `decline` (a page showing an access secret).
Settings changed while running (tests) forget every copy.

Per process at most MAX_BYTES of bodies, least recently used dropped first: the key holds
the session, so copies are never shared between sessions, let alone accounts.
"""

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import wraps

from django.conf import settings
from django.core.signals import setting_changed
from django.db import connection
from django.dispatch import receiver
from django.http import HttpResponse
from django.utils import timezone
from django.utils.translation import get_language

from kernodeck.core import clock, pagecache

MAX_BYTES = 32 * 1024 * 1024
SNAPSHOT_STATEMENT = "SELECT pg_current_snapshot()::text"
# The messages framework's cookie and session key (FallbackStorage).
_MESSAGES_COOKIE = "messages"
_MESSAGES_SESSION_KEY = "_messages"


@dataclass(slots=True)
class Copy:
    body: bytes  # with pagecache.PLACEHOLDER where the request's CSRF token goes
    headers: tuple[tuple[str, str], ...]
    snapshot: str
    built_at: datetime


class _Kept:
    """The store: copies by key, least recently used first, and their bodies' total size."""

    def __init__(self):
        self.copies: OrderedDict = OrderedDict()
        self.size = 0
        self.lock = threading.Lock()

    def get(self, key) -> Copy | None:
        return self.copies.get(key)

    def touch(self, key) -> None:
        with self.lock:
            if key in self.copies:
                self.copies.move_to_end(key)

    def put(self, key, copy: Copy) -> None:
        with self.lock:
            old = self.copies.pop(key, None)
            if old is not None:
                self.size -= len(old.body)
            self.copies[key] = copy
            self.size += len(copy.body)
            while self.size > MAX_BYTES and self.copies:
                _key, dropped = self.copies.popitem(last=False)
                self.size -= len(dropped.body)

    def clear(self) -> None:
        with self.lock:
            self.copies.clear()
            self.size = 0


_kept = _Kept()


def clear() -> None:
    """Forget every kept page (tests; settings changed while running)."""
    _kept.clear()


@receiver(setting_changed)
def _forget_on_setting_changed(**kwargs) -> None:
    clear()


def _seconds() -> int:
    return settings.KERNODECK_SIGNED_PAGE_SECONDS


def database_snapshot() -> str | None:
    """The committed state as `pg_current_snapshot()` gives it, or None where it cannot
    vouch for what a page read: SQLite, an atomic block, autocommit off."""
    if (
        connection.vendor != "postgresql"
        or connection.in_atomic_block
        or not connection.get_autocommit()
    ):
        return None
    with connection.cursor() as cursor:
        cursor.execute(SNAPSHOT_STATEMENT)
        return cursor.fetchone()[0]


def _eligible(request) -> bool:
    return (
        _seconds() > 0
        and request.method in ("GET", "HEAD")
        and request.user.is_authenticated
        and _MESSAGES_COOKIE not in request.COOKIES
        and _MESSAGES_SESSION_KEY not in request.session
    )


def _key(request) -> tuple:
    meta = request.META
    return (
        request.path,
        meta.get("QUERY_STRING", ""),
        meta.get("HTTP_HOST", ""),
        request.is_secure(),
        get_language(),
        timezone.get_current_timezone_name(),
        request.session.session_key,
        request.user.pk,
    )


def decline(request) -> None:
    """This request's answer is not to be kept (a page that shows an access secret)."""
    request._signed_page_declined = True


def _storable(request, response) -> bool:
    if getattr(request, "_signed_page_declined", False):
        return False
    if response.status_code != 200 or response.streaming or response.cookies:
        return False
    if request.session.modified:
        return False
    messages = getattr(request, "_messages", None)
    return not getattr(messages, "added_new", False)


def kept(request, render) -> HttpResponse:
    """`render()`'s answer to `request`, or the copy kept of it while the database is
    unchanged (see the module's docstring); `render` is the view, called without arguments."""
    if not _eligible(request):
        return render()
    snapshot = database_snapshot()
    if snapshot is None:
        return render()
    key = _key(request)
    now = clock.now()
    copy = _kept.get(key)
    if (
        copy is not None
        and copy.snapshot == snapshot
        and timedelta(0) <= now - copy.built_at < timedelta(seconds=_seconds())
    ):
        _kept.touch(key)
        request.signed_page_copy = True  # for the tests and the bench: a kept copy answered
        return pagecache.stored_answer(request, copy.body, copy.headers)
    request._signed_page = True  # the CSRF token is the placeholder while it renders
    try:
        response = render()
        if callable(getattr(response, "render", None)) and not response.is_rendered:
            response.render()  # a TemplateResponse (the admin's): rendered with the placeholder
    finally:
        request._signed_page = False
    if _storable(request, response):
        _kept.put(
            key,
            Copy(
                body=response.content,
                headers=tuple(response.headers.items()),
                snapshot=snapshot,
                built_at=now,
            ),
        )
    return pagecache.with_token(request, response)


def signed_page(view):
    """Keep `view`'s answers while the database is unchanged (the module's docstring). Put
    it below the view's permission decorator, which must still run on every request."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        return kept(request, lambda: view(request, *args, **kwargs))

    return wrapper
