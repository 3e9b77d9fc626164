"""The catalog's read cache: what every visitor sees alike (offers, prices, units free).

Each entry carries the version it was built for; every change to offers, prices, the fleet
or holds bumps the version (`catalog.services.catalog_changed`), and an entry is used for at most
KERNODECK_CATALOG_CACHE_SECONDS by the project clock: a hold that lapses changes the
figures without any write, and shows within that time. With Redis (production) the
version and the entries are shared by every process; with local memory each process keeps
its own, so a change made in another process shows there after the same few seconds.
"""

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache

from kernodeck.core import clock, pagecache

logger = logging.getLogger(__name__)

VERSION_KEY = "catalog:version"


def _max_age() -> timedelta:
    return timedelta(seconds=settings.KERNODECK_CATALOG_CACHE_SECONDS)


def bump() -> None:
    """Make every entry written so far stale.

    Never raises: an order or a node change must not fail because the cache is down (its
    entries then lapse within max-age, as after a lapsed hold)."""
    try:
        try:
            cache.incr(VERSION_KEY)
        except ValueError:
            # Evicted or never set: start from a number no entry written before can carry.
            cache.add(VERSION_KEY, time.time_ns(), timeout=None)
    except Exception:
        logger.warning("catalog cache: could not bump the version", exc_info=True)


def cached(key: str, build):
    """The value of `build()` for `key`, built at most max-age ago and since the last bump.

    One round trip reads the version and the entry together. The entry records the version
    read before it was built, so a value built from rows that a concurrent change replaced
    carries a version that change's bump has already left behind, and is never used.
    Without a working cache the value is built for each call.
    """
    max_age = _max_age()
    if not max_age:
        return build()
    entry_key = f"catalog:{key}"
    try:
        found = cache.get_many([VERSION_KEY, entry_key])
        version = found.get(VERSION_KEY)
        if version is None:
            bump()
            version = cache.get(VERSION_KEY)
    except Exception:
        logger.warning("catalog cache: unavailable, reading the database", exc_info=True)
        return build()
    now = clock.now()
    entry = found.get(entry_key)
    if entry is not None and version is not None:
        built_for, built_at, value = entry
        if built_for == version and timedelta(0) <= now - built_at < max_age:
            return value
    value = build()
    if version is not None:
        try:
            cache.set(entry_key, (version, now, value), timeout=max_age.total_seconds())
        except Exception:
            logger.warning("catalog cache: could not store %s", key, exc_info=True)
    return value


_here: dict[str, tuple[object, object, object]] = {}  # key -> (version, built_at, value)


def clear_here() -> None:
    """Forget this process's copies (tests; a process keeps them until it ends)."""
    _here.clear()


def cached_here(key: str, build):
    """`cached(key, build)` with this process's copy in front, for answers asked for many
    times a second (quotes): the copy is used while the shared version, read at most once
    a second (core/pagecache.py's check, the one stored pages follow), is the one read
    before it was fetched, and for at most max-age. A change that bumps the version shows
    within about a second, as on the catalog page; a hold that lapses without a bump
    within twice max-age (the copy's on top of the shared entry's). Only while the page
    cache is on (KERNODECK_PAGE_CACHE_SECONDS > 0): otherwise `cached` itself."""
    max_age = _max_age()
    if not max_age or not pagecache.enabled():
        return cached(key, build)
    now = clock.now()
    known = _here.get(key)
    if known is not None:
        version, built_at, value = known
        if timedelta(0) <= now - built_at < max_age and (
            pagecache.shared_version(VERSION_KEY, now=now) == version
        ):
            return value
    # Read before the value, so a bump in between leaves the copy behind at once.
    version = pagecache.shared_version(VERSION_KEY, now=now, fresh=True)
    value = cached(key, build)
    if version is not None:
        _here[key] = (version, now, value)
    return value


def shared_page(*, params=(), post=False):
    """`core.pagecache.shared_page` for a page that shows the catalog's figures: its stored
    copies follow the version (dropped within a second of a bump) and are used for at most
    KERNODECK_CATALOG_CACHE_SECONDS, as this cache's entries are."""
    return pagecache.shared_page(
        params=params,
        post=post,
        version_key=VERSION_KEY,
        max_age=lambda: settings.KERNODECK_CATALOG_CACHE_SECONDS,
    )
