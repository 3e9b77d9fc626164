"""The one clock of the project: every "now" goes through here so tests can move it."""

from datetime import datetime

from django.utils import timezone

_frozen: datetime | None = None


def now() -> datetime:
    """Return the current time, timezone-aware in UTC."""
    return _frozen if _frozen is not None else timezone.now()


def freeze(moment: datetime | None) -> None:
    """Pin now() to `moment` (aware), or release it with None. For tests and replays."""
    global _frozen
    if moment is not None and timezone.is_naive(moment):
        raise ValueError("freeze() needs an aware datetime")
    _frozen = moment
