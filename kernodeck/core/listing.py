"""What the rows of list pages made in Python write in their cells, as Django's template
filters write it, without their per-call cost (issue 27).

A filter in a loop pays the template engine's lookup, its `stringfilter` wrapper and,
for `timesince`, lazy translations formatted from scratch, once per cell. These give the
same text: `truncate_chars` as `|truncatechars:n`, `minute_text` (and a page's
`minute_text_maker`) as `|date:"Y-m-d H:i"`,
`timesince_maker` as `|timesince` (its words translated once per page).
"""

import datetime
import unicodedata

from django.utils import timezone
from django.utils.text import Truncator, add_truncation_text, calculate_truncate_chars_length
from django.utils.timesince import MONTHS_DAYS, TIME_CHUNKS
from django.utils.translation import gettext, ngettext, pgettext

# Django's own messages (django.utils.timesince.TIME_STRINGS), looked up in its catalogue.
_TIME_MESSAGES = {
    "year": ("%(num)d year", "%(num)d years"),
    "month": ("%(num)d month", "%(num)d months"),
    "week": ("%(num)d week", "%(num)d weeks"),
    "day": ("%(num)d day", "%(num)d days"),
    "hour": ("%(num)d hour", "%(num)d hours"),
    "minute": ("%(num)d minute", "%(num)d minutes"),
}


def truncate_chars(value, length: int, *, ellipsis: str | None = None) -> str:
    """`{{ value|truncatechars:length }}`. A text no longer than `length` is only
    NFC-normalized, as Truncator does (combining characters only shorten the count); an
    ASCII one (no combining characters) is cut where Truncator cuts it, in Python, with
    the same translated ellipsis (`ellipsis`: `truncation_text()` read once for a page,
    else read here, twice); any other goes through Truncator."""
    text = str(value)
    if len(text) <= length:
        return text if text.isascii() else unicodedata.normalize("NFC", text)
    if not text.isascii() or length <= 0:
        return Truncator(text).chars(length)
    return add_truncation_text(text[: calculate_truncate_chars_length(length, ellipsis)], ellipsis)


def truncation_text() -> str:
    """The translated ellipsis Django's Truncator adds (`add_truncation_text`'s)."""
    return pgettext("String to return when truncating text", "%(truncated_text)s…")


def minute_text(moment) -> str:
    """`{{ moment|date:"Y-m-d H:i" }}` in the current time zone; "" for None."""
    if moment is None:
        return ""
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")


def minute_text_maker():
    """`minute_text` for one page: the current time zone looked up once, not once per
    moment (a thread-local read each). Make one per page, in the page's time zone."""
    zone = timezone.get_current_timezone()

    def text(moment) -> str:
        if moment is None:
            return ""
        if moment.utcoffset() is None:  # naive: localtime's own error
            return minute_text(moment)
        moment = moment.astimezone(zone)
        # strftime's "%Y-%m-%d %H:%M" (its year unpadded, as glibc writes it), at a third
        # of its cost.
        return (
            f"{moment.year}-{moment.month:02d}-{moment.day:02d} "
            f"{moment.hour:02d}:{moment.minute:02d}"
        )

    return text


class _Counted:
    """One of timesince's units: `self % {"num": n}` as its lazy message gives it, each
    count translated once."""

    def __init__(self, singular: str, plural: str):
        self.singular, self.plural, self.written = singular, plural, {}

    def __mod__(self, mapping) -> str:
        num = mapping["num"]
        text = self.written.get(num)
        if text is None:
            text = self.written[num] = ngettext(self.singular, self.plural, num) % mapping
        return text


def timesince_maker(now):
    """A function of a moment returning `{{ moment|timesince }}` at `now`, as text (the
    filter's non-breaking spaces included), its words translated once per function: make
    one per page, in the page's language.

    Django's `timesince(moment, now)` step by step (depth 2), without what it paid per
    call: its ", " translated and its non-breaking spaces put through a lazy-text wrapper
    each time."""
    words = [_Counted(*messages) for messages in _TIME_MESSAGES.values()]
    comma = gettext(", ")
    written: dict[tuple[int, int], str] = {}

    def unit(i: int, num: int) -> str:
        # A unit's words for a count, with the filter's non-breaking spaces, made once.
        text = written.get((i, num))
        if text is None:
            text = written[i, num] = (words[i] % {"num": num}).replace(" ", "\xa0")
        return text

    zero = unit(len(words) - 1, 0)
    if not isinstance(now, datetime.datetime):
        now = datetime.datetime(now.year, now.month, now.day)  # noqa: DTZ001 - as timesince
    now_aware = timezone.is_aware(now)

    def since(d) -> str:
        if not isinstance(d, datetime.datetime):
            d = datetime.datetime(d.year, d.month, d.day)  # noqa: DTZ001 - as timesince
        at = now.astimezone(d.tzinfo) if now_aware and timezone.is_aware(d) else now
        delta = at - d
        seconds = delta.days * 86400 + delta.seconds  # microseconds ignored
        if seconds <= 0:
            return zero
        if delta.days < 27:
            # Under 27 days (of wall-clock time, in d's zone) is never a calendar month:
            # no years or months, and the weeks, days, hours and minutes of whole seconds.
            weeks, seconds = divmod(seconds, 604800)
            days, seconds = divmod(seconds, 86400)
            hours, seconds = divmod(seconds, 3600)
            partials = [0, 0, weeks, days, hours, seconds // 60]
            return _two_units(partials)
        total_months = (at.year - d.year) * 12 + (at.month - d.month)
        if d.day > at.day or (d.day == at.day and d.time() > at.time()):
            total_months -= 1
        years, months = divmod(total_months, 12)
        if years or months:
            pivot_year, pivot_month = d.year + years, d.month + months
            if pivot_month > 12:
                pivot_month -= 12
                pivot_year += 1
            pivot = datetime.datetime(
                pivot_year,
                pivot_month,
                min(MONTHS_DAYS[pivot_month - 1], d.day),
                d.hour,
                d.minute,
                d.second,
                tzinfo=d.tzinfo,
            )
        else:
            pivot = d
        remaining = (at - pivot).total_seconds()
        partials = [years, months]
        for chunk in TIME_CHUNKS:
            count = int(remaining // chunk)
            partials.append(count)
            remaining -= chunk * count
        return _two_units(partials)

    def _two_units(partials: list[int]) -> str:
        # The first unit that is not zero, and the next one unless it is zero.
        first, last = 0, len(partials) - 1
        while partials[first] == 0:
            if first == last:
                return zero
            first += 1
        if first < last and partials[first + 1] != 0:
            return f"{unit(first, partials[first])}{comma}{unit(first + 1, partials[first + 1])}"
        return unit(first, partials[first])

    return since
