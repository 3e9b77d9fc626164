"""Session engine: `accounts.sessions`' database sessions, read through the shared cache.

Chosen by settings when the cache is Redis (shared by every worker); with the local-memory
cache each process would keep its own copy, so the plain database engine is used instead.

A signed-in request reads its session from the cache (one Redis round trip instead of a
database query); the database row stays the record (the account page lists it, "sign out
everywhere else" deletes it). What makes a cached copy safe is how sessions end: whatever
deletes a session row (this store's `delete`: sign-out, a new key at sign-in, a failed
password check; `forget_ended` for the services that delete rows by queryset) also writes
an "ended" mark for its key, which nothing removes. Every read asks for the data and the mark in
one round trip and a marked key reads as no session, so a copy that a concurrent request
put back into the cache after the row was deleted (it read the row just before the delete
committed) signs nobody in. The mark outlives any such copy (`ENDED_SECONDS`). Expired
sessions need no mark: their copy leaves the cache when the row expires.

The class keeps the name `SessionStore`: Django derives the session data's signing salt
from the class name, and a renamed class would read every existing session as corrupted.
"""

import logging
import re

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import caches
from django.db import router, transaction

from kernodeck.accounts import sessions

DATA_PREFIX = "kd.session:"
ENDED_PREFIX = "kd.session-ended:"
# A session key as Django makes them (32 characters of a-z0-9): anything else from a cookie
# is looked up in the database alone (it matches no row) and never becomes a cache key.
KEY_FORMAT = re.compile(r"[a-z0-9]{32}")

logger = logging.getLogger("kernodeck.accounts.sessions")


def ended_seconds() -> int:
    """How long an "ended" mark lasts: longer than any cached copy a racing request can
    still write (a copy lives at most SESSION_COOKIE_AGE), with an hour for that request."""
    return settings.SESSION_COOKIE_AGE + 3600


def _cache():
    return caches[settings.SESSION_CACHE_ALIAS]


class SessionStore(sessions.SessionStore):
    def load(self):
        key = self.session_key
        if not KEY_FORMAT.fullmatch(key or ""):
            return super().load()
        try:
            found = _cache().get_many([DATA_PREFIX + key, ENDED_PREFIX + key])
        except Exception:
            logger.exception("session cache unavailable: reading the session from the database")
            return super().load()
        if ENDED_PREFIX + key in found:
            self._session_key = None  # as the database store does for a missing row
            return {}
        data = found.get(DATA_PREFIX + key)
        if data is not None:
            return data
        row = self._get_session_from_db()
        if row is None:
            return {}
        data = self.decode(row.session_data)
        try:
            # add, not set: a newer copy a concurrent save wrote stays.
            _cache().add(DATA_PREFIX + key, data, self.get_expiry_age(expiry=row.expire_date))
        except Exception:
            logger.exception("session cache unavailable: the session is not cached")
        return data

    def save(self, must_create=False):
        super().save(must_create)  # raises if the row was deleted meanwhile
        key, data, age = self.session_key, dict(self._session), self.get_expiry_age()

        def cache_copy():
            try:
                _cache().set(DATA_PREFIX + key, data, age)
            except Exception:
                logger.exception("session cache unavailable: the session is not cached")

        # The old copy goes at once (until the commit, reads find the row in the database);
        # the new one is written after the commit: a rolled-back save leaves no copy of data
        # the row does not hold.
        try:
            _cache().delete(DATA_PREFIX + key)
        except Exception:
            logger.exception("session cache unavailable: the session is not cached")
        transaction.on_commit(cache_copy, using=router.db_for_write(self.model))

    def delete(self, session_key=None):
        key = session_key if session_key is not None else self.session_key
        if key:
            # Marked first: if the cache fails, the row stays too and the sign-out fails
            # visibly, instead of a copy outliving its row once the cache is back.
            self.forget_ended([key])
        super().delete(session_key)

    @classmethod
    def forget_ended(cls, keys) -> None:
        """Mark these sessions ended and drop their cached copies (the caller deletes or
        deleted their rows). Done at once, not after the commit: a mark is never taken back,
        so a transaction that rolls back leaves the browser signed out (the safe way to be
        wrong), and a copy written back meanwhile is refused by the mark. A cache that fails
        here raises: a session that would still sign its browser in must not pass silently."""
        keys = [key for key in keys if key]
        if not keys:
            return
        cache = _cache()
        cache.set_many({ENDED_PREFIX + key: 1 for key in keys}, ended_seconds())
        cache.delete_many([DATA_PREFIX + key for key in keys])

    # The project serves WSGI; the async variants go through the same cache rules.
    async def aload(self):
        return await sync_to_async(self.load)()

    async def asave(self, must_create=False):
        return await sync_to_async(self.save)(must_create)

    async def adelete(self, session_key=None):
        return await sync_to_async(self.delete)(session_key)
