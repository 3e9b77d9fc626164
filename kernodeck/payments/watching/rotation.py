"""Address polling in turns: which watched intents a polling pass asks the chain about,
when the adapter asks one address at a time (Esplora; Tron with its block scan off) and
KERNODECK_WATCH_POLL_BUDGET bounds the pass.

Neither API answers for many addresses at once, so a pass costs one request (Tron: two)
per polled address. Every pass polls, whatever the budget, what correctness needs:

- an intent a customer asked to look at again (`rescan_requested_at`);
- every one that is not a pending payment (detected, confirmed, allocated or decided
  while open; detected past its expiry), so confirmations, replacements and reorgs of a
  payment are followed as before (a pending intent has no counted transfer: any counted
  one makes it detected);
- every pending one past its expiry or within `expiry_window` of it: EXPIRY_PASSES passes
  at KERNODECK_WATCH_INTERVAL, or at the time since the last pass when that is longer.
  A payment made before the expiry is then first seen before it, as when every address
  was polled on every pass (a transfer's time is the earlier of its block's and its
  first sighting, `storing.classify`): made inside that window, the next pass sees it;
  made earlier, the turn or at the latest the passes inside the window do.

The other open pending intents are polled in turn, up to the budget those leave (the
turn: at least a quarter of the budget, so it always moves on): first the ones created
in the last RECENT_SECONDS (customers pay right after asking), newest first, for at most
half of the turn (rounded down); then the others in a round by id, going on after the
last one the round polled (`ChainState.rotation_after`, saved with the chain's health
once the pass is applied), so those it polled longest ago come first. The round takes
at least half of the turn: an open intent waits at most ceil(pending / that) passes, and
one more if it became pending behind the round's place. Intents kept only for late
payments are polled every KERNODECK_WATCH_LATE_INTERVAL, as without a budget; a stored
transfer in a block a reorg replaced makes its address polled at once
(`scanning._reorged_addresses`).
"""

import logging
import math
from bisect import bisect_right
from dataclasses import dataclass
from datetime import timedelta
from uuid import UUID

from django.conf import settings

from kernodeck.payments.models import IntentStatus

logger = logging.getLogger(__name__)

# Passes before its expiry during which a pending intent is polled on every pass: one
# failed pass there is still followed by one that looks.
EXPIRY_PASSES = 3
# Intents this young come first in the turn: most customers pay within a minute or two.
RECENT_SECONDS = 120


def polls_in_turns(adapter) -> bool:
    """Whether this adapter's polling pass may poll its intents in turns: it asks one
    address at a time (not a shared recipient, not block windows), and a budget is set."""
    return (
        getattr(adapter, "polls_each_address", False) and settings.KERNODECK_WATCH_POLL_BUDGET > 0
    )


def expiry_window(state, now) -> timedelta:
    """How close to its expiry a pending intent is polled on every pass: EXPIRY_PASSES
    intervals, measured by the time since the last pass (its success or its error) when
    that is longer: passes that come late (cron, a busy worker) widen it, and the first
    after the watcher stood still polls every instruction that may expire before the
    next ones. Not the time since the last success: after an outage of the API that
    would make every pass poll every open address, one that may not fit its deadline."""
    interval = settings.KERNODECK_WATCH_INTERVAL
    tried = [getattr(state, name, None) for name in ("last_success_at", "last_error_at")]
    tried = [moment for moment in tried if moment is not None]
    gap = (now - max(tried)).total_seconds() if tried else 0
    return timedelta(seconds=EXPIRY_PASSES * max(interval, gap))


def polled_every_pass(row, now, window: timedelta) -> bool:
    """What correctness needs on every pass (the module's docstring)."""
    if row.rescan_requested_at is not None or row.status == IntentStatus.DETECTED:
        return True
    if row.status == IntentStatus.PENDING:
        return row.expires_at <= now + window
    return row.expires_at > now


@dataclass
class Turn:
    """The intents a pass polls (`polled`: light rows): how many of them it polls whatever
    the budget (`required`: every pass's, and the late window's on its interval) and how
    many in turn, how many open ones wait for a later pass, and where the turn goes on
    next time (`after`)."""

    polled: list
    required: int
    in_turn: int
    waiting: int
    after: UUID | None


def turn_choose(rows, state, *, now, late_due: bool, budget: int) -> Turn:
    """Split the watched `rows` (WATCHED_FIELDS) into what this pass polls (the module's
    docstring); `late_due`: the intents kept only for late payments are polled too."""
    window = expiry_window(state, now)
    required, pending = [], []
    for row in rows:
        if polled_every_pass(row, now, window):
            required.append(row)
        elif row.expires_at > now:
            pending.append(row)
        elif late_due:
            required.append(row)  # kept only for late payments: on the late interval
    share = max(budget - len(required), math.ceil(budget / 4))
    if len(required) > budget:
        # Nothing is dropped: all of them are polled, and the turn still moves.
        logger.warning(
            "%d payment instructions need a poll this pass, more than "
            "KERNODECK_WATCH_POLL_BUDGET (%d): all are polled, and %d more in turn",
            len(required),
            budget,
            min(share, len(pending)),
        )
    after = getattr(state, "rotation_after", None)
    taken = turn_take(pending, share=share, after=after, recent_since=recent_since(now))
    return Turn(
        polled=required + taken.rows,
        required=len(required),
        in_turn=len(taken.rows),
        waiting=len(pending) - len(taken.rows),
        after=taken.after,
    )


def recent_since(now):
    return now - timedelta(seconds=RECENT_SECONDS)


@dataclass
class Taken:
    rows: list
    after: UUID | None


def turn_take(pending, *, share: int, after: UUID | None, recent_since) -> Taken:
    """Up to `share` of the `pending` rows: those created after `recent_since`, newest
    first, for at most half of it (rounded down); then the others by id, from the first
    after `after` round to the start. Returns them and the id the next turn goes on after
    (`after` itself when no row was taken by id)."""
    recent = sorted(
        (row for row in pending if row.created_at > recent_since),
        key=lambda row: (row.created_at, row.pk),
        reverse=True,
    )[: share // 2]
    first = {row.pk for row in recent}
    by_pk = sorted((row for row in pending if row.pk not in first), key=lambda row: row.pk)
    start = bisect_right([row.pk for row in by_pk], after) if after is not None else 0
    rows = (by_pk[start:] + by_pk[:start])[: share - len(recent)]
    return Taken(rows=recent + rows, after=rows[-1].pk if rows else after)
