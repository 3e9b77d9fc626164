"""Lost races between transactions: retried a few times, then refused with a 409.

PostgreSQL ends one of two transactions that wait on each other (deadlock, SQLSTATE 40P01)
or that cannot be serialised (40001). Nothing of that transaction was kept, and its side
effects are scheduled with `on_commit`, so running the whole service call again is safe.
Only the outermost call retries: a service called inside another one's transaction lets
the error travel up to the caller that owns the transaction.
"""

import functools
import logging
import random
import time

from django.db import OperationalError, transaction
from django.utils.translation import gettext as _

from kernodeck.core.errors import Conflict

logger = logging.getLogger(__name__)

RACE_ATTEMPTS = 3
RACE_SQLSTATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected


class LostRace(Conflict):
    """Another action on the same records won; nothing was changed."""


def is_lost_race(exc: BaseException) -> bool:
    """True for a deadlock or serialisation failure reported by the database."""
    cause = exc.__cause__
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code in RACE_SQLSTATES


def retry_lost_races(func):
    """Run a service again when its transaction lost a race; answer LostRace (409) after
    RACE_ATTEMPTS tries. Inside an open transaction the call is passed through unchanged."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if transaction.get_connection().in_atomic_block:
            return func(*args, **kwargs)
        for attempt in range(1, RACE_ATTEMPTS + 1):
            try:
                return func(*args, **kwargs)
            except OperationalError as exc:
                if not is_lost_race(exc):
                    raise
                logger.info("%s lost a race (attempt %d): %s", func.__qualname__, attempt, exc)
                if attempt == RACE_ATTEMPTS:
                    raise LostRace(
                        _(
                            "Another action on the same order or balance happened at the same "
                            "moment, so nothing was changed. Please look at the page again "
                            "and retry."
                        )
                    ) from exc
                time.sleep(random.uniform(0.01, 0.05) * attempt)
        raise AssertionError("unreachable")

    return wrapper
