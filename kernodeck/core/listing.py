"""What the rows of list pages made in Python write in their cells, as Django's template
filters write it, without their per-call cost (issue 27).

A filter in a loop pays the template engine's lookup, its `stringfilter` wrapper and,
for `timesince`, lazy translations formatted from scratch, once per cell. These give the
same text: `truncate_chars` as `|truncatechars:n`, `minute_text` as `|date:"Y-m-d H:i"`,
`timesince_maker` as `|timesince` (its words translated once per page).
"""

import unicodedata

from django.utils import timezone
from django.utils.text import Truncator, add_truncation_text, calculate_truncate_chars_length
from django.utils.timesince import timesince
from django.utils.translation import ngettext

# Django's own messages (django.utils.timesince.TIME_STRINGS), looked up in its catalogue.
_TIME_MESSAGES = {
    "year": ("%(num)d year", "%(num)d years"),
    "month": ("%(num)d month", "%(num)d months"),
    "week": ("%(num)d week", "%(num)d weeks"),
    "day": ("%(num)d day", "%(num)d days"),
    "hour": ("%(num)d hour", "%(num)d hours"),
    "minute": ("%(num)d minute", "%(num)d minutes"),
}


def truncate_chars(value, length: int) -> str:
    """`{{ value|truncatechars:length }}`. A text no longer than `length` is only
    NFC-normalized, as Truncator does (combining characters only shorten the count); an
    ASCII one (no combining characters) is cut where Truncator cuts it, in Python, with
    the same translated ellipsis; any other goes through Truncator."""
    text = str(value)
    if len(text) <= length:
        return text if text.isascii() else unicodedata.normalize("NFC", text)
    if not text.isascii() or length <= 0:
        return Truncator(text).chars(length)
    return add_truncation_text(text[: calculate_truncate_chars_length(length, None)])


def minute_text(moment) -> str:
    """`{{ moment|date:"Y-m-d H:i" }}` in the current time zone; "" for None."""
    if moment is None:
        return ""
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M")


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
