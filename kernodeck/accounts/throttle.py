"""Fixed-window counters in Django's cache, for sign-in and registration attempts.

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


def retry_after(scope: str, subject: str) -> int:
    """Seconds until `subject` may try again in `scope`; 0 when it may try now."""
    if not settings.KERNODECK_THROTTLE:
        return 0
    attempts, _window = _limit(scope)
    entry = cache.get(_key(scope, subject))
    if not entry or entry["count"] < attempts:
        return 0
    return max(1, math.ceil(entry["until"] - time.time()))


def hit(scope: str, subject: str) -> None:
    """Count one attempt of `subject` in `scope`."""
    if not settings.KERNODECK_THROTTLE:
        return
    _attempts, window = _limit(scope)
    key = _key(scope, subject)
    entry = cache.get(key)
    now = time.time()
    if not entry or entry["until"] <= now:
        entry = {"count": 0, "until": now + window}
    entry["count"] += 1
    cache.set(key, entry, timeout=max(1, math.ceil(entry["until"] - now)))


def reset(scope: str, subject: str) -> None:
    cache.delete(_key(scope, subject))


def check(scope: str, *subjects: str, message) -> None:
    """Raise Throttled if any subject has used up its attempts in `scope`."""
    wait = max((retry_after(scope, subject) for subject in subjects), default=0)
    if wait:
        minutes = math.ceil(wait / 60)
        raise Throttled(
            message
            + " "
            + ngettext("Try again in %(n)d minute.", "Try again in %(n)d minutes.", minutes)
            % {"n": minutes},
            retry_after=wait,
        )
