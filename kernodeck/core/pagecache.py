"""Whole public pages for anonymous visitors, kept per process and served before the view.

A view opts in with `@shared_page`; a GET or HEAD from a visitor with no session cookie, no
messages cookie and no Authorization header is then answered from this process's copy of
the page when it has one that is still fresh, without URL resolution, view or template.

What makes a page the same for everyone: while a shareable page renders, `csrf_token` is a
placeholder (`context_processors.csrf_placeholder`, which outranks Django's built-in one),
and every answer, stored or not, has the placeholder replaced by one `csrf_token(request)`
of the visitor's own: a masked form of their CSRF secret, so CsrfViewMiddleware sets and
rotates their cookie as it does for a rendered page, and their forms post as before.
The placeholder is random per process, so no input can put it into a page.

The key: the path, the raw query string (a view names the parameters it accepts; any
other makes the page unshared) and the active language (LocaleMiddleware runs first).
A view whose answer to a POST is a pure function of its body (a quote: `shared_page`'s
`post`) has that answer shared as well, keyed also by the content type and the body's
bytes, for a POST of JSON of at most POST_BODY_LIMIT bytes: only the very same request
finds it, and only a 200 that came through the whole stack (input guard, CSRF, the view's
own validation) was stored.
Demo mode and the support address are settings, the same for the whole process. At most
`ENTRIES` pages per process, least recently used dropped first, and as many answers to
POSTs, kept apart so that new bodies never push a page out.

Freshness: an entry is used for at most KERNODECK_PAGE_CACHE_SECONDS (0: no page cache),
by the project clock. A page that shows the catalog's figures names the catalog's version
key and max age: its entry records the version as this process knew it before the view
ran and is dropped once the shared version differs, which this process checks at most once
every `VERSION_CHECK_SECONDS`; a change that bumps the version therefore shows within about
a second, and a hold that lapses without any write (no bump) within the page's max age plus
that of the catalog entry the page was built from (twice KERNODECK_CATALOG_CACHE_SECONDS).
The version recorded is never newer than the figures the view read (versions only grow,
and the view's own reads of the version come after), so an entry can only be dropped too
soon, never kept past a change; and a page rendered anew costs no extra read of it.

Only a 200, non-streaming answer that set no cookie, left the session unchanged and
queued no message is stored. The middleware sits last in MIDDLEWARE: every other
middleware (CSRF, locale, CSP, X-Frame-Options, metrics) still runs on a served copy, and
the copy carries the view's own headers and the URL match the metrics label it by.

A visitor who sends no cookie at all and no Authorization (a first visit, a crawler, a
load test) is answered earlier, by `StoredPageMiddleware` right after WhiteNoise: once a
whole answer of a stored page has come back through the rest of the stack, its headers
as they left the stack (the session's, locale's, CSRF's `Vary`, `Content-Language`,
`Content-Length`, X-Frame-Options) are kept with the copy, and such a visitor gets the copy
with those very headers and a CSRF cookie of their own, without the session, locale,
common, CSRF, auth, messages, input-guard and X-Frame-Options middlewares: none of them
can change that answer (no cookie, nothing in the session or messages, a key that only a
refused-free, accepted query matches; the host is still validated as CommonMiddleware does,
the language chosen as LocaleMiddleware does). The middlewares before it (request id,
metrics, security headers and the HTTPS redirect, CSP) run as for any request.

The visitor's token is made here as Django's `get_token` makes it (a 32-character secret
of CSRF_ALLOWED_CHARS, a mask of the same, the cipher Django unmasks), the characters drawn
uniformly from os.urandom by bytes.translate instead of 64 `SystemRandom.choice` calls.
"""

import os
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import wraps

from django.conf import settings
from django.conf.urls.i18n import is_language_prefix_patterns_used
from django.core.cache import cache
from django.http import HttpResponse
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, get_token
from django.utils import translation
from django.utils.translation import get_language

from kernodeck.core import clock, stack

ENTRIES = 256
POST_BODY_LIMIT = 1024  # the most bytes of a POST's body a key holds (`shared_page`'s `post`)
VERSION_CHECK_SECONDS = 1.0
PLACEHOLDER = f"kernodeck-shared-page-{secrets.token_hex(16)}"
PLACEHOLDER_BYTES = PLACEHOLDER.encode("ascii")


@dataclass
class Page:
    body: bytes  # with the placeholder where the visitor's token goes
    headers: tuple[tuple[str, str], ...]
    resolver_match: object
    built_at: datetime
    max_age: timedelta
    version_key: str | None
    version: object
    # The headers of a whole answer of this copy as it left the rest of the stack, for
    # StoredPageMiddleware (None until one has come back through it).
    outer_headers: tuple[tuple[str, str], ...] | None = None


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
# Answers to POSTs (`shared_page`'s `post`), apart: their keys hold bytes a caller chooses
# (the same fields spaced otherwise), so a stream of new bodies churns only this store,
# never the pages'.
_answers: OrderedDict = OrderedDict()
# The paths of copies StoredPageMiddleware can serve: any other request passes it without
# choosing a language (bounded: only shared pages' paths, forgotten past 4 times ENTRIES).
_early_paths: set[str] = set()
# The same for answers to POSTs: their paths and bodies, each dropped with its answer.
_early_bodies: set[tuple[str, bytes]] = set()
_versions: dict[str, tuple[object, datetime]] = {}
_lock = threading.Lock()


def clear() -> None:
    """Forget every stored page and version (tests; a process keeps them until it ends)."""
    with _lock:
        _pages.clear()
        _answers.clear()
        _versions.clear()
        _early_paths.clear()
        _early_bodies.clear()


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


def shared_version(key: str, *, now: datetime, fresh: bool = False):
    """The shared version under `key` (None: unknown, or the cache is down), read at most
    once every VERSION_CHECK_SECONDS unless `fresh`; for this process's other copies that
    follow a version as stored pages do (catalog/caching.py's `cached_here`)."""
    return _read_version(key, now=now) if fresh else _version(key, now=now)


def enabled() -> bool:
    """Whether process-local copies of shared answers are in use (the page cache's setting)."""
    return _seconds() > 0


def _version(key: str, *, now: datetime):
    """The shared version under `key`, read at most once every VERSION_CHECK_SECONDS."""
    known = _versions.get(key)
    if known is not None:
        version, read_at = known
        if timedelta(0) <= now - read_at < timedelta(seconds=VERSION_CHECK_SECONDS):
            return version
    return _read_version(key, now=now)


def _small_json(request) -> bool:
    """A POST of JSON whose declared length is at most POST_BODY_LIMIT bytes: one whose
    body can be part of a key (see `shared_page`'s `post`)."""
    meta = request.META
    length = meta.get("CONTENT_LENGTH") or ""
    return (
        request.method == "POST"
        and length.isascii()
        and length.isdigit()
        and 0 < int(length) <= POST_BODY_LIMIT
        and meta.get("CONTENT_TYPE", "").startswith("application/json")
    )


def _keyable(request) -> bool:
    """A GET or HEAD, or a POST of a small JSON body: a request whose answer has a key."""
    return request.method in ("GET", "HEAD") or _small_json(request)


def _slot(request, language: str) -> tuple[OrderedDict, tuple]:
    """Where a copy of the answer to `request` is kept and under which key: the path, the
    raw query string and the language among the pages; a POST's answers apart, its key
    also holding its content type and its body, so only the very same bytes find it."""
    meta = request.META
    query = meta.get("QUERY_STRING", "")
    if request.method == "POST":
        return _answers, (request.path, query, language, meta["CONTENT_TYPE"], request.body)
    return _pages, (request.path, query, language)


def _may_be_early(request) -> bool:
    """Whether StoredPageMiddleware may hold a copy for `request`: one of a page kept for
    its path, or for a POST of a small JSON body an answer kept for its path and body (so
    a new body passes at the cost of a set lookup, as a page nobody kept does)."""
    if _small_json(request):
        return (request.path, request.body) in _early_bodies
    return request.path in _early_paths


def _anonymous(request) -> bool:
    cookies = request.COOKIES
    return (
        _keyable(request)
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


def shared_page(view=None, *, params=(), max_age=None, version_key=None, post=False):
    """Declare `view`'s answer to anonymous visitors shareable between them.

    `params`: the query parameters the page accepts (any other one: not shared, so that
    stray parameters cannot fill the cache). `max_age`: a callable giving the most seconds
    an entry may be used, below KERNODECK_PAGE_CACHE_SECONDS (0: not shared).
    `version_key`: a cache key whose value changes whenever the page's content does.
    `post`: the view also answers a POST of a small JSON body (`_small_json`) with a pure
    function of that body and the language (an API's calculation, such as a quote), so
    its answer to the same bytes is shared too; no other view's answer to a POST is.
    A view that finds the request's answer unfit to share (it echoes refused input) calls
    `decline(request)` before rendering."""
    accepted = frozenset(params)

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            candidate = getattr(request, "_shared_page", None)
            if (
                candidate is not None
                and (post or request.method != "POST")
                and _accepts(request, accepted)
            ):
                seconds = _seconds()
                if max_age is not None:
                    seconds = min(seconds, max_age())
                if seconds > 0:
                    candidate.shared = True
                    candidate.max_age = timedelta(seconds=seconds)
                    if version_key is not None:
                        candidate.version_key = version_key
                        candidate.version = _version(version_key, now=clock.now())
            return view(request, *args, **kwargs)

        return wrapper

    return decorate(view) if view is not None else decorate


def decline(request) -> None:
    """This request's answer is not to be stored (the token is still the visitor's own)."""
    candidate = getattr(request, "_shared_page", None)
    if candidate is not None:
        candidate.declined = True


def placeholder_wanted(request) -> bool:
    """Whether the page being rendered for `request` shows the placeholder as its token: a
    page shared between anonymous visitors, or a signed-in page being kept
    (core/signedpages.py)."""
    if getattr(request, "_signed_page", False):
        return True
    candidate = getattr(request, "_shared_page", None)
    return candidate is not None and candidate.shared


def form_token(request) -> str:
    """The CSRF token for a form a view writes itself (not through the template's
    `csrf_token`): the placeholder while the page is kept or shared, else `get_token`."""
    return PLACEHOLDER if placeholder_wanted(request) else get_token(request)


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
    if stack.messages_untouched(request):
        return True  # asking the lazy storage would make it, to say nothing was added
    messages = getattr(request, "_messages", None)
    return not getattr(messages, "added_new", False)


# bytes.translate maps each random byte to a character by its low six bits and deletes
# the two values of 64 that name none: every one of the 62 characters has exactly four
# bytes of 256, so each kept character is uniform, as get_random_string's are.
_CHARS = CSRF_ALLOWED_CHARS.encode("ascii")
_TO_CHAR = bytes(_CHARS[b & 63] if b & 63 < len(_CHARS) else 0 for b in range(256))
_NO_CHAR = bytes(b for b in range(256) if b & 63 >= len(_CHARS))
_INDEX = {char: i for i, char in enumerate(CSRF_ALLOWED_CHARS)}


def _random_chars(length: int) -> str:
    """`length` characters of CSRF_ALLOWED_CHARS, uniform, from the system's CSPRNG."""
    drawn = b""
    while len(drawn) < length:
        drawn += os.urandom(length + 8).translate(_TO_CHAR, _NO_CHAR)
    return drawn[:length].decode("ascii")


def csrf_token(request) -> str:
    """Django's `get_token(request)`, the same secret handling and token format (the
    cookie's secret when the request brought one, else a new one that CsrfViewMiddleware
    sets as the cookie), with the random characters drawn by `_random_chars`."""
    meta = request.META
    secret = meta.get("CSRF_COOKIE")
    if secret is None:
        secret = _random_chars(CSRF_SECRET_LENGTH)
        meta["CSRF_COOKIE"] = secret
    meta["CSRF_COOKIE_NEEDS_UPDATE"] = True
    mask = _random_chars(CSRF_SECRET_LENGTH)
    chars, index, count = CSRF_ALLOWED_CHARS, _INDEX, len(CSRF_ALLOWED_CHARS)
    return mask + "".join(
        chars[(index[s] + index[m]) % count] for s, m in zip(secret, mask, strict=True)
    )


def with_token(request, response):
    """`response` with the placeholder, where it shows one, replaced by the request's token."""
    if not response.streaming and PLACEHOLDER_BYTES in response.content:
        token = csrf_token(request).encode("ascii")
        response.content = response.content.replace(PLACEHOLDER_BYTES, token)
    return response


class PageCacheMiddleware:
    """Serve and store the pages views declared shareable (`shared_page`), for anonymous
    GET and HEAD requests; last in MIDDLEWARE (see this module's docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if _seconds() <= 0 or not _anonymous(request):
            return self.get_response(request)
        kept, key = _slot(request, get_language())
        now = clock.now()
        page = kept.get(key)
        if page is not None and _fresh(page, now):
            with _lock:
                if key in kept:
                    kept.move_to_end(key)
            request._page_answered = page
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
                kept[key] = stored
                kept.move_to_end(key)
                while len(kept) > ENTRIES:
                    dropped, _page = kept.popitem(last=False)
                    if kept is _answers:
                        path, *_, body = dropped
                        _early_bodies.discard((path, body))
            request._page_answered = stored
        return with_token(request, response)

    @staticmethod
    def _serve(request, page: Page):
        request.resolver_match = page.resolver_match  # the metrics' route label
        return stored_answer(request, page.body, page.headers)


def stored_answer(request, body: bytes, headers) -> HttpResponse:
    """A stored page's answer: its body, the placeholder where it shows one replaced by the
    request's own token, and the view's headers (`headers`: name and value pairs)."""
    if PLACEHOLDER_BYTES in body:
        body = body.replace(PLACEHOLDER_BYTES, csrf_token(request).encode("ascii"))
    response = HttpResponse(body)
    for name, value in headers:
        response.headers[name] = value
    return response


def _cookieless(request) -> bool:
    """A GET or HEAD, or a POST of a small JSON body, that brings no cookie at all and no
    Authorization, where nothing in the settings would make the skipped middlewares answer
    differently. Such a POST's copy is served here only once the same request came back
    through the whole stack with a 200 (`_keep_headers`): with no cookie, CSRF lets a POST
    through only to a view exempt from it (the API's), so the skipped check cannot refuse it."""
    return (
        _keyable(request)
        and not request.META.get("HTTP_COOKIE")
        and "HTTP_AUTHORIZATION" not in request.META
        and not settings.CSRF_USE_SESSIONS
        and not settings.PREPEND_WWW
        and not settings.DISALLOWED_USER_AGENTS
        and not is_language_prefix_patterns_used(
            getattr(request, "urlconf", settings.ROOT_URLCONF)
        )[0]
    )


class StoredPageMiddleware:
    """Answer a visitor without cookies from a stored copy, with the headers the rest of
    the stack gave that copy, right after WhiteNoise (see this module's docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _may_be_early(request) or _seconds() <= 0 or not _cookieless(request):
            return self._through(request)
        request.get_host()  # DisallowedHost (400), as CommonMiddleware would raise it
        # As LocaleMiddleware chooses it (no cookie: from Accept-Language).
        language = translation.get_language_from_request(request, check_path=False)
        translation.activate(language)
        request.LANGUAGE_CODE = translation.get_language()
        kept, key = _slot(request, request.LANGUAGE_CODE)
        page = kept.get(key)
        if page is not None and page.outer_headers is not None and _fresh(page, clock.now()):
            with _lock:
                if key in kept:
                    kept.move_to_end(key)
            return self._serve(request, page)
        return self._through(request)

    def _through(self, request):
        response = self.get_response(request)
        answered = getattr(request, "_page_answered", None)
        if answered is not None and answered.outer_headers is None and _cookieless(request):
            self._keep_headers(request, answered, response)
        return response

    @staticmethod
    def _keep_headers(request, page: Page, response) -> None:
        """Keep the headers of `page`'s answer as they left the stack, when it is the whole
        answer: a 200 whose only cookie is the CSRF one its token called for."""
        cookies = set(response.cookies)
        wants_token = PLACEHOLDER_BYTES in page.body
        if (
            response.status_code == 200
            and not response.streaming
            and cookies == ({settings.CSRF_COOKIE_NAME} if wants_token else set())
        ):
            page.outer_headers = tuple(response.headers.items())
            with _lock:
                if request.method == "POST":
                    if len(_early_bodies) >= 4 * ENTRIES:
                        _early_bodies.clear()  # only if answers dropped by another thread
                    _early_bodies.add((request.path, request.body))
                else:
                    if len(_early_paths) >= 4 * ENTRIES:
                        _early_paths.clear()
                    _early_paths.add(request.path)

    @staticmethod
    def _serve(request, page: Page):
        request.resolver_match = page.resolver_match  # the metrics' route label
        response = stored_answer(request, page.body, page.outer_headers)
        if "Content-Length" in response.headers:
            response.headers["Content-Length"] = str(len(response.content))
        if PLACEHOLDER_BYTES in page.body:
            # The token put in came from this secret (csrf_token keeps it in META).
            secret = request.META["CSRF_COOKIE"]
            # What CsrfViewMiddleware sets for a new secret (its Vary is in the headers).
            response.set_cookie(
                settings.CSRF_COOKIE_NAME,
                secret,
                max_age=settings.CSRF_COOKIE_AGE,
                domain=settings.CSRF_COOKIE_DOMAIN,
                path=settings.CSRF_COOKIE_PATH,
                secure=settings.CSRF_COOKIE_SECURE,
                httponly=settings.CSRF_COOKIE_HTTPONLY,
                samesite=settings.CSRF_COOKIE_SAMESITE,
            )
            request.META["CSRF_COOKIE_NEEDS_UPDATE"] = False
        return response
