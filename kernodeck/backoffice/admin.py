"""The audit trail's admin page (here, not in core: it names the orders and payments the
events are about, and core reads no domain)."""

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.core.paginator import InvalidPage
from django.db.models import Count, Max, Min
from django.utils.translation import gettext_lazy as _

from kernodeck.backoffice import audit_targets
from kernodeck.backoffice.templatetags import audit_list
from kernodeck.core import signedpages
from kernodeck.core.models import AuditEvent
from kernodeck.core.selectors import (
    AUDIT_LIST_ORDER,
    AUDIT_LIST_VALUES,
    AUDIT_TRAIL_VALUE_COLUMNS,
    AuditListRow,
    audit_trail_listed,
    audit_trail_values,
)

# The actor's columns the list does not show: all but its key and e-mail.
_ACTOR = AuditEvent._meta.get_field("actor").related_model
_ACTOR_UNSHOWN = tuple(
    f"actor__{field.name}"
    for field in _ACTOR._meta.concrete_fields
    if field.name not in (_ACTOR._meta.pk.name, _ACTOR.EMAIL_FIELD)
)


class AuditChangeList(ChangeList):
    """Each row of the page gets its target's words, read once for the page. A row is what
    it shows (core.selectors.AuditListRow: no before/after/data JSON, and of the actor's
    account its key and e-mail, `str(user)`); where the admin's own rows are written
    instead (a popup), the events are instances without those columns."""

    def get_queryset(self, request, exclude_parameters=None):
        return (
            super()
            .get_queryset(request, exclude_parameters=exclude_parameters)
            .defer("before", "after", "data", *_ACTOR_UNSHOWN)
        )

    def get_results(self, request):
        """ChangeList.get_results, with the rows as AuditListRow values where
        `{% audit_result_list %}` writes them (no model instance per event and actor),
        the whole trail's page and count from fixed statements when nothing narrows or
        reorders the list (`audit_trail_listed`), and no second COUNT(*) then (the whole
        trail's count is the one just read). Without a date chosen, the list's first and
        last moments, which the date hierarchy starts from, are read with its count
        (`date_range`, for `{% audit_date_hierarchy %}`)."""
        self.rows_are_values = audit_list.writes_own_rows(self)
        self.date_range = None
        field = self.date_hierarchy
        whole = self.whole_trail = self.rows_are_values and self._whole_trail_newest_first()
        if whole:
            listed, first, last = audit_trail_listed()
            result_count = listed.count()
            self.date_range = (first, last)
        else:
            listed = self.queryset
            if self.rows_are_values:
                listed = listed.values_list(*AUDIT_LIST_VALUES)
            if (
                field
                and not self.queryset.query.distinct
                and not any(
                    self.params.get(f"{field}__{part}") for part in ("year", "month", "day")
                )
            ):
                found = self.queryset.aggregate(
                    count=Count("*"), first=Min(field), last=Max(field)
                )
                result_count = found["count"]
                self.date_range = (found["first"], found["last"])
            else:
                result_count = self.queryset.count()
        paginator = self.model_admin.get_paginator(request, listed, self.list_per_page)
        paginator.count = result_count
        full_result_count = None
        if self.model_admin.show_full_result_count:
            unfiltered = not self.queryset.query.where and not self.root_queryset.query.where
            full_result_count = result_count if unfiltered else self.root_queryset.count()
        self.result_count = result_count
        self.show_full_result_count = self.model_admin.show_full_result_count
        self.show_admin_actions = not self.show_full_result_count or bool(full_result_count)
        self.full_result_count = full_result_count
        self.can_show_all = result_count <= self.list_max_show_all
        self.multi_page = result_count > self.list_per_page
        self.paginator = paginator
        if (self.show_all and self.can_show_all) or not self.multi_page:
            # Every event: a fixed statement reads no more than the most a page shows.
            found = listed[: max(self.list_max_show_all, self.list_per_page)] if whole else listed
        else:
            try:
                found = paginator.page(self.page_num).object_list
            except InvalidPage as exc:
                raise IncorrectLookupParameters from exc
        if self.rows_are_values and not whole:
            found = map(AuditListRow._make, found)
        self.result_list = list(found)
        self.target_words = audit_targets.target_labels(self.result_list)
        if not self.rows_are_values:  # the admin's own rows ask AuditEventAdmin.target
            for event in self.result_list:
                event.target_words = self.target_words[(event.target_type, event.target_id)]

    def _whole_trail_newest_first(self) -> bool:
        """Whether the list is the whole trail in its own order (no search, filter or
        date narrows it, no column reorders it): what `audit_trail_listed` reads."""
        query = self.queryset.query
        return (
            not query.where
            and not query.distinct
            and not query.extra
            and tuple(query.order_by) == AUDIT_LIST_ORDER
            and self.date_hierarchy == "created_at"
        )


class TrailValuesFilter(admin.AllValuesFieldListFilter):
    """The admin's filter by each distinct value of a column, with its choices and links;
    the distinct values of both filtered columns (AUDIT_TRAIL_VALUE_COLUMNS) read once per
    request, in one statement that steps through their indexes
    (`audit_trail_values`) instead of a read of every event for each filter."""

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        values = getattr(request, "_audit_trail_values", None)
        if values is None:
            values = request._audit_trail_values = audit_trail_values()
        self.lookup_choices = values[field_path]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit trail is evidence, nobody edits it. The search box also finds
    an order's events by its reference (KD-…), its payments' and rental's included."""

    list_display = ["created_at", "action", "target", "actor", "ip_address"]
    # The whole trail's, as the admin's get_queryset (not overridden) gives it.
    list_filter = [(name, TrailValuesFilter) for name in AUDIT_TRAIL_VALUE_COLUMNS]
    # `actor` may be empty (system events), which Django's automatic select_related skips.
    list_select_related = ["actor"]
    search_fields = ["action", "target_id", "actor__email"]
    search_help_text = _("An action, an e-mail, an id, or an order reference (KD-…).")
    date_hierarchy = "created_at"
    readonly_fields = ["target"]

    def get_changelist(self, request, **kwargs):
        return AuditChangeList

    def changelist_view(self, request, extra_context=None):
        """The list, kept while the database is unchanged (core/signedpages.py); the view
        permission is checked here on every request, before any kept copy is sent."""
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        return signedpages.kept(
            request, lambda: super(AuditEventAdmin, self).changelist_view(request, extra_context)
        )

    @admin.display(description=_("about"))
    def target(self, obj):
        words = getattr(obj, "target_words", None)
        if words is None:
            words = audit_targets.target_labels([obj])[(obj.target_type, obj.target_id)]
        return words

    def get_search_results(self, request, queryset, search_term):
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        of_order = audit_targets.order_reference_events(search_term)
        if of_order is not None:
            found = found | queryset.filter(of_order)
        return found, may_have_duplicates

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
