"""What the rows of list pages made in Python write in their cells, as Django's template
filters write it, without their per-call cost (issue 27).

A filter in a loop pays the template engine's lookup, its `stringfilter` wrapper and,
for `timesince`, lazy translations formatted from scratch, once per cell. These give the
same text: `truncate_chars` as `|truncatechars:n`, `minute_text` as `|date:"Y-m-d H:i"`
(`minute_text_maker` the same, each day written once per page), `timesince_maker` as
`|timesince` (its words translated once per page).
"""

import unicodedata

from django.utils import timezone
from django.utils.text import Truncator, add_truncation_text, calculate_truncate_chars_length
from django.utils.timesince import timesince
from django.utils.translation import ngettext, pgettext

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


# " HH:MM" of each hour and minute of a day, as strftime's " %H:%M" writes them.
_CLOCK = tuple(tuple(f" {hour:02d}:{minute:02d}" for minute in range(60)) for hour in range(24))


def minute_text_maker():
    """A function of a moment returning `minute_text(moment)` in the current time zone,
    for the rows of one page: each local day's date written once (strftime was some 5 µs
    a moment, more than the rest of a pending top-up's line), the hour and minute read
    from a table."""
    zone = timezone.get_current_timezone()
    days: dict[int, str] = {}

    def text(moment) -> str:
        if moment is None or moment.tzinfo is None:
            return minute_text(moment)  # "" for None; a naive moment raises as there
        local = moment.astimezone(zone)
        day = local.toordinal()
        date = days.get(day)
        if date is None:
            date = days[day] = local.strftime("%Y-%m-%d")
        return date + _CLOCK[local.hour][local.minute]

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
    one per page, in the page's language."""
    words = {name: _Counted(*messages) for name, messages in _TIME_MESSAGES.items()}
    return lambda moment: str(timesince(moment, now, time_strings=words))
