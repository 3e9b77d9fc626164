"""Fixed-window attempt counters in Django's cache, for sign-in and registration.

An attempt is counted atomically BEFORE the slow work it guards (the password hash), and
the attempt that takes the counter past the limit is refused without doing that work:
however many requests arrive at once, at most the limit get through. `cache.add` creates
a window's counter only when absent and `cache.incr` increments it atomically — an INCR
on Redis, a locked read-modify-write in the local-memory cache.

With the default local-memory cache the counters are per process; configure
KERNODECK_REDIS_URL when several web processes must share them.
"""

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.utils.translation import ngettext

from kernodeck.core.errors import Throttled


def _key(scope: str, subject: str) -> str:
    digest = hashlib.sha256(subject.strip().lower().encode()).hexdigest()[:32]
    return f"kd:throttle:{scope}:{digest}"


def _limit(scope: str) -> tuple[int, int]:
    return getattr(settings, f"KERNODECK_THROTTLE_{scope.upper()}")


def _count(scope: str, subject: str) -> tuple[int, float]:
    """Count one attempt; return the attempts in the current window and when it ends."""
    _attempts, window = _limit(scope)
    key = _key(scope, subject)
    for _try in range(3):
        now = time.time()
        # Two keys: the counter, and the moment its window ends (for "try again in").
        # Whoever creates the counter first opens the window; add() never overwrites.
        cache.add(key + ":until", now + window, timeout=window)
        cache.add(key, 0, timeout=window)
        try:
            count = cache.incr(key)
        except ValueError:
            continue  # the window ended between add() and incr(): open the next one
        until = cache.get(key + ":until") or now + window
        return count, until
    raise RuntimeError("throttle counter kept expiring")  # pragma: no cover


def _refusal(message, wait: float) -> Throttled:
    wait = max(1, math.ceil(wait))
    minutes = math.ceil(wait / 60)
    return Throttled(
        message
        + " "
        + ngettext("Try again in %(n)d minute.", "Try again in %(n)d minutes.", minutes)
        % {"n": minutes},
        retry_after=wait,
    )


def attempt(scope: str, subject: str, *, message) -> None:
    """Count one attempt of `subject` in `scope`; raise Throttled past the limit.

    Call it before the work it protects: the counting itself is the check.
    """
    if not settings.KERNODECK_THROTTLE:
        return
    attempts, _window = _limit(scope)
    count, until = _count(scope, subject)
    if count > attempts:
        raise _refusal(message, until - time.time())


def refund(scope: str, subject: str) -> None:
    """Give back one attempt counted by `attempt` (it turned out not to be a failure)."""
    if not settings.KERNODECK_THROTTLE:
        return
    try:
        if cache.decr(_key(scope, subject)) < 0:
            cache.incr(_key(scope, subject))
    except ValueError:
        pass  # the window has ended already: nothing to give back


def retry_after(scope: str, subject: str) -> int:
    """Seconds until `subject` may try again in `scope`; 0 when it may try now."""
    if not settings.KERNODECK_THROTTLE:
        return 0
    attempts, _window = _limit(scope)
    key = _key(scope, subject)
    count = cache.get(key) or 0
    if count < attempts:
        return 0
    until = cache.get(key + ":until") or time.time()
    return max(1, math.ceil(until - time.time()))


def reset(scope: str, subject: str) -> None:
    key = _key(scope, subject)
    cache.delete_many([key, key + ":until"])


def hit(scope: str, subject: str) -> None:
    """Count one attempt without refusing (for failures counted after the fact).

    Prefer `attempt`, which counts and refuses in one atomic step before the work.
    """
    if settings.KERNODECK_THROTTLE:
        _count(scope, subject)


def check(scope: str, *subjects: str, message) -> None:
    """Raise Throttled if any subject has used up its attempts in `scope` (no counting)."""
    wait = max((retry_after(scope, subject) for subject in subjects), default=0)
    if wait:
        raise _refusal(message, wait)
