"""core.listing writes what Django's template filters write (`truncatechars`, `date`,
`timesince`) in English and Spanish, at the edges where they differ from a naive cut."""

from datetime import UTC, datetime, timedelta

import pytest
from django.template import engines
from django.utils import dateformat, formats, timezone, translation
from django.utils.html import conditional_escape

from kernodeck.backoffice.templatetags.audit_list import _moment_writer
from kernodeck.core.listing import (
    minute_text,
    minute_text_maker,
    timesince_maker,
    truncate_chars,
    truncation_text,
)

NOW = datetime(2026, 3, 31, 12, 0, 30, tzinfo=UTC)


def _filter(expression: str, **context) -> str:
    return (
        engines["django"]
        .from_string("{% autoescape off %}" + expression + "{% endautoescape %}")
        .render(context)
    )


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("length", [1, 2, 20, 24, 70])
@pytest.mark.parametrize(
    "text",
    [
        "",
        "a",
        "x" * 19,
        "x" * 20,
        "x" * 21,
        "0123456789abcdef" * 5,
        "<script>&\"'" * 3,
        "Café déjà vu " * 6,
        "e\u0301" * 30,  # combining accents: not counted by Truncator
        "ü" * 25,
    ],
)
def test_truncate_chars_is_truncatechars(language, length, text):
    with translation.override(language):
        expected = _filter("{{ text|truncatechars:length }}", text=text, length=length)
        assert truncate_chars(text, length) == expected
        assert truncate_chars(text, length, ellipsis=truncation_text()) == expected


@pytest.mark.parametrize(
    "moment",
    [None, NOW, NOW.replace(month=1, day=2, hour=3, minute=4, second=59)],
)
def test_minute_text_is_the_date_filter(moment):
    assert minute_text(moment) == _filter('{{ moment|date:"Y-m-d H:i" }}', moment=moment)


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/St_Johns", "Asia/Kolkata"])
def test_minute_text_maker_is_the_date_filter_in_the_current_time_zone(zone):
    """Each day written once, across midnights and the changes of summer time."""
    moments = [None, NOW, datetime(2026, 3, 29, 0, 59, 59, tzinfo=UTC)]
    moments += [NOW + timedelta(minutes=37 * n) for n in range(-2000, 2000, 7)]
    moments += [
        datetime(2026, 10, 25, 0, 0, tzinfo=UTC) + timedelta(minutes=n) for n in range(180)
    ]
    with timezone.override(zone):
        text = minute_text_maker()
        for moment in moments:
            assert text(moment) == _filter('{{ moment|date:"Y-m-d H:i" }}', moment=moment)


def test_minute_text_maker_refuses_a_naive_moment_as_minute_text_does():
    with pytest.raises(ValueError):
        minute_text_maker()(NOW.replace(tzinfo=None))


@pytest.mark.parametrize("zone", ["UTC", "Europe/Madrid", "America/Caracas"])
def test_minute_text_maker_is_the_date_filter_in_the_pages_time_zone(zone):
    from zoneinfo import ZoneInfo

    from django.utils import timezone

    moments = [None, NOW, NOW.replace(month=1, day=2, hour=23, minute=4, second=59)]
    moments.append(NOW.astimezone(ZoneInfo("Asia/Tokyo")))
    with timezone.override(zone):
        text = minute_text_maker()
        for moment in moments:
            assert text(moment) == minute_text(moment)
            assert text(moment) == _filter('{{ moment|date:"Y-m-d H:i" }}', moment=moment)
        with pytest.raises(ValueError):
            text(NOW.replace(tzinfo=None))
        for year in (999, 1000, 9999):  # the year as strftime writes it
            moment = NOW.replace(year=year, month=6, day=9, hour=1, minute=2)
            assert text(moment) == minute_text(moment)


@pytest.mark.parametrize("language", ["en", "es"])
def test_timesince_maker_is_timesince_at_the_pages_moment(language):
    from django.utils.timesince import timesince

    moments = [
        NOW,
        NOW + timedelta(minutes=5),  # in the future: "0 minutes"
        NOW - timedelta(seconds=59),
        NOW - timedelta(minutes=1),
        NOW - timedelta(minutes=61),
        NOW - timedelta(days=1, hours=2),
        NOW - timedelta(days=15),
        NOW - timedelta(days=31),  # across February
        NOW - timedelta(days=400),
        datetime(2024, 2, 29, 12, tzinfo=UTC),
    ]
    with translation.override(language):
        since = timesince_maker(NOW)
        for moment in moments:
            assert since(moment) == timesince(moment, NOW), moment
            assert since(moment) == since(moment)  # the cached words are the same


@pytest.mark.parametrize("language", ["en", "es"])
def test_timesince_maker_is_timesince_at_every_distance(language):
    """Every unit and pair of units, month ends and leap days, other time zones and dates:
    the maker's text is the filter's own, step for step."""
    from zoneinfo import ZoneInfo

    from django.utils.timesince import timesince

    madrid = ZoneInfo("Europe/Madrid")
    nows = [NOW, datetime(2028, 2, 29, 23, 59, 59, tzinfo=UTC), NOW.astimezone(madrid)]
    steps = [timedelta(seconds=s) for s in (0, 1, 59, 60, 61, 3599, 3600, 3661)]
    steps += [timedelta(hours=h, minutes=7) for h in (5, 23, 24, 25, 47, 167, 168, 169)]
    steps += [timedelta(days=d, hours=3) for d in (6, 7, 13, 27, 28, 29, 30, 31, 58, 59, 60)]
    steps += [timedelta(days=d) for d in (89, 180, 364, 365, 366, 367, 395, 730, 1461, 3000)]
    with translation.override(language):
        for now in nows:
            since = timesince_maker(now)
            for step in steps:
                for moment in (now - step, (now - step).astimezone(madrid), now + step):
                    assert since(moment) == timesince(moment, now), (now, moment)
        naive = NOW.replace(tzinfo=None)
        for day in (NOW.date(), (NOW - timedelta(days=45)).date()):
            assert timesince_maker(naive)(day) == timesince(day, naive)


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize(
    "moment_format",
    [
        "DATETIME_FORMAT",
        "Y-m-d H:i:s",
        r"N j, Y, P \s \\",
        "aAbcdDeEfFgGhHiIjlLmMnNoOPrsStTUuwWyYzZ",
    ],
)
def test_the_audit_dates_are_dateformats_own(language, moment_format):
    """The audit list writes each code once per day or minute: the same text as
    dateformat.format, seconds and time zones included, in English and Spanish."""
    moments = [
        datetime(2026, 12, 3, 0, 0, 1, tzinfo=UTC),
        datetime(2026, 12, 3, 0, 0, 59, 123456, tzinfo=UTC),
        datetime(2026, 12, 3, 12, 0, tzinfo=UTC),
        datetime(2026, 12, 3, 17, 5, tzinfo=UTC),
        datetime(2026, 12, 4, 17, 5, tzinfo=UTC),
        datetime(2027, 1, 1, 9, 41, 5, tzinfo=UTC),
    ]
    with translation.override(language):
        real_format = formats.get_format(moment_format)
        write = _moment_writer(real_format, "-")
        for moment in moments + moments:  # the second time from what was written
            assert write(moment) == conditional_escape(dateformat.format(moment, real_format))
    assert write(None) == "-"
