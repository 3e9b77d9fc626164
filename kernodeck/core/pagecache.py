"""Whole public pages for anonymous visitors, kept per process and served before the view.

A view opts in with `@shared_page`; a GET or HEAD from a visitor with no session cookie, no
messages cookie and no Authorization header is then answered from this process's copy of
the page when it has one that is still fresh, without URL resolution, view or template.

What makes a page the same for everyone: while a shareable page renders, `csrf_token` is a
placeholder (`context_processors.csrf_placeholder`, which outranks Django's built-in one),
and every answer, stored or not, has the placeholder replaced by one `get_token(request)`
of the visitor's own: a masked form of their CSRF secret, so CsrfViewMiddleware sets and
rotates their cookie as it does for a rendered page, and their forms post as before.
The placeholder is random per process, so no input can put it into a page.

The key: the path, the raw query string (a view names the parameters it accepts; any
other makes the page unshared) and the active language (LocaleMiddleware runs first).
Demo mode and the support address are settings, the same for the whole process. At most
`ENTRIES` pages per process, least recently used dropped first.

Freshness: an entry is used for at most KERNODECK_PAGE_CACHE_SECONDS (0: no page cache),
by the project clock. A page that shows the catalog's figures names the catalog's version
key and max age: its entry records the version read before the view ran and is dropped
once the shared version differs, which this process checks at most once every
`VERSION_CHECK_SECONDS`; a change that bumps the version therefore shows within about a
second, and a hold that lapses without any write (no bump) within the page's max age plus
that of the catalog entry the page was built from (twice KERNODECK_CATALOG_CACHE_SECONDS).

Only a 200, non-streaming answer that set no cookie, left the session unchanged and
queued no message is stored. The middleware sits last in MIDDLEWARE: every other
middleware (CSRF, locale, CSP, X-Frame-Options, metrics) still runs on a served copy, and
the copy carries the view's own headers and the URL match the metrics label it by.
"""

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.utils.translation import get_language

from kernodeck.core import clock

ENTRIES = 256
VERSION_CHECK_SECONDS = 1.0
PLACEHOLDER = f"kernodeck-shared-page-{secrets.token_hex(16)}"
_PLACEHOLDER_BYTES = PLACEHOLDER.encode("ascii")


@dataclass(frozen=True)
class Page:
    body: bytes  # with the placeholder where the visitor's token goes
    headers: tuple[tuple[str, str], ...]
    resolver_match: object
    built_at: datetime
    max_age: timedelta
    version_key: str | None
    version: object


class Candidate:
    """An anonymous GET or HEAD that the view may declare shareable (`shared_page`)."""

    __slots__ = ("declined", "key", "max_age", "shared", "version", "version_key")

    def __init__(self, key):
        self.key = key
        self.shared = False
        self.declined = False
        self.max_age = None
        self.version_key = None
        self.version = None


_pages: OrderedDict = OrderedDict()
_versions: dict[str, tuple[object, datetime]] = {}
_lock = threading.Lock()


def clear() -> None:
    """Forget every stored page and version (tests; a process keeps them until it ends)."""
    with _lock:
        _pages.clear()
        _versions.clear()


def _seconds() -> int:
    return settings.KERNODECK_PAGE_CACHE_SECONDS


def _read_version(key: str, *, now: datetime):
    try:
        version = cache.get(key)
    except Exception:
        version = None  # the cache is down: nothing that follows it is stored or served
    with _lock:
        _versions[key] = (version, now)
    return version


def _version(key: str, *, now: datetime):
    """The shared version under `key`, read at most once every VERSION_CHECK_SECONDS."""
    known = _versions.get(key)
    if known is not None:
        version, read_at = known
        if timedelta(0) <= now - read_at < timedelta(seconds=VERSION_CHECK_SECONDS):
            return version
    return _read_version(key, now=now)


def _anonymous(request) -> bool:
    cookies = request.COOKIES
    return (
        request.method in ("GET", "HEAD")
        and settings.SESSION_COOKIE_NAME not in cookies
        and "messages" not in cookies  # the messages framework's cookie
        and "HTTP_AUTHORIZATION" not in request.META
    )


def _accepts(request, accepted: frozenset) -> bool:
    """Whether the query string holds only `accepted` parameters, each once (a stray one,
    a repeated one, a bare "?" or "&": the page is not shared, so input cannot multiply
    the entries of one page)."""
    query = request.GET
    if not query:
        return not request.META.get("QUERY_STRING")
    return (
        accepted.issuperset(query)
        and all(len(values) == 1 for _name, values in query.lists())
        and request.META.get("QUERY_STRING", "").count("&") == len(query) - 1
    )


def shared_page(view=None, *, params=(), max_age=None, version_key=None):
    """Declare `view`'s answer to anonymous visitors shareable between them.

    `params`: the query parameters the page accepts (any other one: not shared, so that
    stray parameters cannot fill the cache). `max_age`: a callable giving the most seconds
    an entry may be used, below KERNODECK_PAGE_CACHE_SECONDS (0: not shared).
    `version_key`: a cache key whose value changes whenever the page's content does.
    A view that finds the request's answer unfit to share (it echoes refused input) calls
    `decline(request)` before rendering."""
    accepted = frozenset(params)

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            candidate = getattr(request, "_shared_page", None)
            if candidate is not None and _accepts(request, accepted):
                seconds = _seconds()
                if max_age is not None:
                    seconds = min(seconds, max_age())
                if seconds > 0:
                    candidate.shared = True
                    candidate.max_age = timedelta(seconds=seconds)
                    if version_key is not None:
                        candidate.version_key = version_key
                        candidate.version = _read_version(version_key, now=clock.now())
            return view(request, *args, **kwargs)

        return wrapper

    return decorate(view) if view is not None else decorate


def decline(request) -> None:
    """This request's answer is not to be stored (the token is still the visitor's own)."""
    candidate = getattr(request, "_shared_page", None)
    if candidate is not None:
        candidate.declined = True


def placeholder_wanted(request) -> bool:
    """Whether the page being rendered for `request` shows the placeholder as its token."""
    candidate = getattr(request, "_shared_page", None)
    return candidate is not None and candidate.shared


def _fresh(page: Page, now: datetime) -> bool:
    if not timedelta(0) <= now - page.built_at < page.max_age:
        return False
    if page.version_key is None:
        return True
    return _version(page.version_key, now=now) == page.version


def _storable(request, response, candidate) -> bool:
    if not candidate.shared or candidate.declined:
        return False
    if response.status_code != 200 or response.streaming or response.cookies:
        return False
    if candidate.version_key is not None and candidate.version is None:
        return False
    session = getattr(request, "session", None)
    if session is not None and session.modified:
        return False
    messages = getattr(request, "_messages", None)
    return not getattr(messages, "added_new", False)


def _with_token(request, response):
    if not response.streaming and _PLACEHOLDER_BYTES in response.content:
        token = get_token(request).encode("ascii")
        response.content = response.content.replace(_PLACEHOLDER_BYTES, token)
    return response


class PageCacheMiddleware:
    """Serve and store the pages views declared shareable (`shared_page`), for anonymous
    GET and HEAD requests; last in MIDDLEWARE (see this module's docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if _seconds() <= 0 or not _anonymous(request):
            return self.get_response(request)
        key = (request.path, request.META.get("QUERY_STRING", ""), get_language())
        now = clock.now()
        page = _pages.get(key)
        if page is not None and _fresh(page, now):
            with _lock:
                if key in _pages:
                    _pages.move_to_end(key)
            return self._serve(request, page)
        candidate = request._shared_page = Candidate(key)
        response = self.get_response(request)
        if not candidate.shared:
            return response
        if _storable(request, response, candidate):
            stored = Page(
                body=response.content,
                headers=tuple(response.headers.items()),
                resolver_match=getattr(request, "resolver_match", None),
                built_at=now,
                max_age=candidate.max_age,
                version_key=candidate.version_key,
                version=candidate.version,
            )
            with _lock:
                _pages[key] = stored
                _pages.move_to_end(key)
                while len(_pages) > ENTRIES:
                    _pages.popitem(last=False)
        return _with_token(request, response)

    @staticmethod
    def _serve(request, page: Page):
        request.resolver_match = page.resolver_match  # the metrics' route label
        body = page.body
        if _PLACEHOLDER_BYTES in body:
            body = body.replace(_PLACEHOLDER_BYTES, get_token(request).encode("ascii"))
        response = HttpResponse(body)
        for name, value in page.headers:
            response.headers[name] = value
        return response
