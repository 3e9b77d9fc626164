"""The audit list's rows, made in one pass (issue 27).

Django admin's `{% result_list %}` walks `items_for_result` for every cell: a field lookup,
an empty-value check, `format_html` and the localized date format resolved again for each of
the page's 100 rows and 5 columns. `{% audit_result_list cl %}` gives the same context and
the same HTML for the audit trail's columns, with the link, the date format and the empty
value found once for the page; any other change list (actions, a popup, list_editable,
other columns) falls back to the admin's own rows.
"""

import copy
import html

from django import template
from django.conf import settings
from django.contrib.admin.templatetags import admin_list
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.templatetags.base import InclusionAdminNode
from django.contrib.admin.utils import get_fields_from_path
from django.db import models
from django.urls import reverse
from django.utils import dateformat, formats, timezone
from django.utils.dateformat import re_escaped, re_formatchars
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe
from django.utils.translation import get_language

from kernodeck.core.selectors import audit_trail_units

register = template.Library()

COLUMNS = ["created_at", "action", "target", "actor", "ip_address"]
_PLACEHOLDER = "987654321"

# The navigation sidebars written, by what they are made of (see `audit_nav_sidebar`).
SIDEBARS: dict[tuple, str] = {}
SIDEBARS_KEPT = 64


@register.inclusion_tag("admin/change_list_results.html")
def audit_result_list(cl):
    """What the admin's `result_list` returns, with the rows made by `_rows`."""
    headers = list(admin_list.result_headers(cl))
    return {
        "cl": cl,
        "result_hidden_fields": list(admin_list.result_hidden_fields(cl)),
        "result_headers": headers,
        "num_sorted_fields": sum(1 for h in headers if h["sortable"] and h["sorted"]),
        "results": _rows(cl),
    }


@register.tag(name="audit_date_hierarchy")
def audit_date_hierarchy_tag(parser, token):
    """`{% date_hierarchy cl %}`, from the first and last moments read with the count."""
    return InclusionAdminNode(
        parser,
        token,
        func=_date_hierarchy,
        template_name="date_hierarchy.html",
        takes_context=False,
    )


def _date_hierarchy(cl):
    """The admin's date_hierarchy, without reading the list's first and last moments again
    (AuditChangeList.date_range): given the year and month it would find in them (its
    links drop every date parameter, so they are the same), or its list of years. The
    days, months or years it lists are read only when one may lie strictly between the
    first and the last moment's (`_known_units`), and then, for the whole trail, by
    stepping through the moments' index where that is exact (`audit_trail_units`)."""
    date_range = getattr(cl, "date_range", None)
    if date_range is None:
        return admin_list.date_hierarchy(cl)
    field = cl.date_hierarchy
    moments = isinstance(get_fields_from_path(cl.model, field)[-1], models.DateTimeField)
    first, last = date_range
    if first and last:
        first, last = (timezone.localtime(v) if timezone.is_aware(v) else v for v in date_range)
        if first.year == last.year:
            known = copy.copy(cl)
            known.params = {**cl.params, f"{field}__year": first.year}
            unit = "month"
            if first.month == last.month:
                known.params[f"{field}__month"] = first.month
                unit = "day"
            units = _units_without_orm(cl, first, last, unit, moments)
            if units is not None:
                known.queryset = _Units(units)
            return admin_list.date_hierarchy(known)
    kind = "datetimes" if moments else "dates"
    years = _units_without_orm(cl, first, last, "year", bool(moments and first and last))
    if years is None:
        years = getattr(cl.queryset, kind)(field, "year")
    return {
        "show": True,
        "back": None,
        "choices": [
            {
                "link": cl.get_query_string({f"{field}__year": str(year.year)}, [f"{field}__"]),
                "title": str(year.year),
            }
            for year in years
        ],
    }


def _units_without_orm(cl, first, last, unit: str, from_moments: bool) -> list | None:
    """The list's days, months or years where they can be told without the ORM's read of
    every event: from its first and last moments (`from_moments`: they are moments and
    both known), else for the whole trail by stepping through the index; None otherwise."""
    units = _known_units(first, last, unit) if from_moments else None
    if units is None and getattr(cl, "whole_trail", False):
        units = audit_trail_units(unit)
    return units


def _known_units(first, last, unit: str) -> list | None:
    """What `queryset.datetimes(field, unit)` answers for a list whose first and last
    moments (local, of the same month for days and the same year for months) are these,
    when it holds no other: both moments' own, where no day, month or year lies strictly
    between them (the same or the next one); None where one may."""
    if unit == "day":
        apart, truncate = last.day - first.day, {"hour": 0}
    elif unit == "month":
        apart, truncate = last.month - first.month, {"day": 1, "hour": 0}
    else:
        apart, truncate = last.year - first.year, {"month": 1, "day": 1, "hour": 0}
    if apart > 1:
        return None
    # As the ORM's Trunc gives them: the start of each, in the current time zone.
    zone = timezone.get_current_timezone() if settings.USE_TZ else None
    units = []
    for moment in (first, last)[: apart + 1]:
        units.append(
            moment.replace(**truncate, minute=0, second=0, microsecond=0, tzinfo=zone, fold=0)
        )
    return units


class _Units:
    """A list's days, months or years already known, in place of the queryset the admin's
    date_hierarchy would ask for them."""

    def __init__(self, units: list):
        self._units = units

    def datetimes(self, field_name: str, kind: str) -> list:
        return self._units


@register.simple_tag(takes_context=True)
def audit_nav_sidebar(context) -> str:
    """What `{% include "admin/nav_sidebar.html" %}` writes, rendered once per language,
    page path and list of apps and models the account sees (all the template reads), then
    reused: its loops over every app and model cost about as much as the page's rows."""
    key = (
        get_language(),
        context["request"].path,
        tuple(
            (
                app["app_label"],
                app["app_url"],
                str(app["name"]),
                tuple(
                    (
                        model["object_name"],
                        model["admin_url"],
                        model["add_url"],
                        str(model["name"]),
                    )
                    for model in app["models"]
                ),
            )
            for app in context.get("available_apps") or ()
        ),
    )
    sidebar = SIDEBARS.get(key)
    if sidebar is None:
        sidebar = context.template.engine.get_template("admin/nav_sidebar.html").render(context)
        if len(SIDEBARS) >= SIDEBARS_KEPT:
            SIDEBARS.clear()
        SIDEBARS[key] = sidebar
    return sidebar


def writes_own_rows(cl) -> bool:
    """Whether `{% audit_result_list %}` writes this change list's rows itself (the audit
    trail's columns, linked by their moment; no popup, no editing), from AuditListRow
    values (AuditChangeList reads them so where this is true)."""
    return (
        list(cl.list_display) == COLUMNS
        and list(cl.list_display_links or ()) == COLUMNS[:1]
        and not cl.list_editable
        and not cl.is_popup
        and not cl.to_field
    )


def _rows(cl) -> list:
    if not getattr(cl, "rows_are_values", False):
        return list(admin_list.results(cl))
    admin = cl.model_admin
    empty = admin.get_empty_value_display()
    # The change link, reversed and given the page's filters once, the key put in its place.
    url = reverse(
        f"admin:{cl.opts.app_label}_{cl.opts.model_name}_change",
        args=(_PLACEHOLDER,),
        current_app=admin.admin_site.name,
    )
    url = add_preserved_filters({"preserved_filters": cl.preserved_filters, "opts": cl.opts}, url)
    before, after = (conditional_escape(part) for part in url.split(_PLACEHOLDER, 1))
    moment = _moment_writer(formats.get_format("DATETIME_FORMAT"), empty)

    def text(value) -> str:
        """display_for_field / display_for_value of a text column, escaped."""
        if value is None or (isinstance(value, str) and value.strip() == ""):
            return empty
        return _escape(value)

    words = cl.target_words
    rows = [
        f'<th class="field-created_at nowrap"><a href="{before}{row.id}{after}">'
        f"{moment(row.created_at)}</a></th>"
        f'<td class="field-action">{text(row.action)}</td>'
        f'<td class="field-target">{text(words[row.target_type, row.target_id])}</td>'
        '<td class="field-actor nowrap">'
        f"{empty if row.actor_id is None else _escape(row.actor_email)}</td>"
        f'<td class="field-ip_address">{text(row.ip_address)}</td>'
        for row in cl.result_list
    ]
    if not rows:
        return []
    # One row of one cell holding the page's rows: the results template writes each row as
    # `<tr>` and its cells side by side, then `</tr>` and the blank lines of its loop (the
    # form errors' `{% if %}` is empty here), so the table's HTML is the same with one turn
    # of each loop instead of two template loops per row.
    page = _BETWEEN_ROWS.join(rows)
    return [admin_list.ResultList(None, [mark_safe(page)])]  # noqa: S308 - escaped


# What change_list_results.html writes between one row's cells and the next row's.
_BETWEEN_ROWS = "</tr>\n\n\n<tr>"


def _escape(value) -> str:
    """conditional_escape's text, without its SafeString wrapper for plain values."""
    if hasattr(value, "__html__"):
        return value.__html__()
    return html.escape(str(value))


# dateformat's codes that read only the moment's day, and those that read only its hour
# and minute; the others (seconds, microseconds, the epoch, whole moments, time zone
# names and offsets) are written for each moment.
_DAY_CODES = frozenset("bdDEFjlLmMnNoStwWyYz")
_MINUTE_CODES = frozenset("aAfgGhHiP")


# Moments written, by language, format and local minute, for the formats that read no
# more than the minute (English's and Spanish's): shared by the pages, as a page's events
# are mostly of distinct minutes and the next page shows most of them again.
MOMENTS: dict[tuple, str] = {}
MOMENTS_KEPT = 20_000


def _moment_writer(moment_format: str, empty: str):
    """`display_for_field` of the creation moment: `dateformat.format` of it in the current
    time zone with the localized DATETIME_FORMAT, escaped. Each code's text is written
    once per day (month names, the day) or per minute (the time) for the page, instead of
    a DateFormat and a lazy translation per code and row; a whole moment once per minute
    for the process when its format reads nothing finer."""
    pieces = re_formatchars.split(moment_format)
    literals = {i: re_escaped.sub(r"\1", piece) for i, piece in enumerate(pieces) if not i % 2}
    by_minute = all(code in _DAY_CODES or code in _MINUTE_CODES for code in pieces[1::2])
    language = get_language()
    written = {}

    def write(local) -> str:
        formatter = None
        texts = []
        for i, piece in enumerate(pieces):
            if not i % 2:
                texts.append(literals[i])
                continue
            if piece in _DAY_CODES:
                key = (piece, local.date())
            elif piece in _MINUTE_CODES:
                key = (piece, local.hour, local.minute)
            else:
                key = None
            text = written.get(key) if key else None
            if text is None:
                formatter = formatter or dateformat.DateFormat(local)
                text = str(getattr(formatter, piece)())
                if key:
                    written[key] = text
            texts.append(text)
        return conditional_escape("".join(texts))

    # template_localtime's zone, found once for the page.
    zone = timezone.get_current_timezone() if settings.USE_TZ else None

    def moment(value) -> str:
        if not value:
            return empty
        local = value
        if zone is not None and value.utcoffset() is not None:
            local = value.astimezone(zone)
        if not by_minute:
            return write(local)
        key = (
            language,
            moment_format,
            local.year,
            local.month,
            local.day,
            local.hour,
            local.minute,
        )
        text = MOMENTS.get(key)
        if text is None:
            if len(MOMENTS) >= MOMENTS_KEPT:
                MOMENTS.clear()
            text = MOMENTS[key] = write(local)
        return text

    return moment
