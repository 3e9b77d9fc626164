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
from kernodeck.core import signedpages
from kernodeck.core.models import AuditEvent

# The actor's columns the list does not show: all but its key and e-mail.
_ACTOR = AuditEvent._meta.get_field("actor").related_model
_ACTOR_UNSHOWN = tuple(
    f"actor__{field.name}"
    for field in _ACTOR._meta.concrete_fields
    if field.name not in (_ACTOR._meta.pk.name, _ACTOR.EMAIL_FIELD)
)


class AuditChangeList(ChangeList):
    """Each row of the page gets its target's words, read once for the page. The events'
    before/after/data (JSON the list never shows) are not read for it, nor of the actor's
    account more than its key and e-mail (all the row shows of it: `str(user)`), not its
    password hash, names and dates."""

    def get_queryset(self, request, exclude_parameters=None):
        return (
            super()
            .get_queryset(request, exclude_parameters=exclude_parameters)
            .defer("before", "after", "data", *_ACTOR_UNSHOWN)
        )

    def get_results(self, request):
        """ChangeList.get_results, less its second COUNT(*) when nothing narrows the list
        (no search, filter or date): the whole trail's count is then the one just read.
        Without a date chosen, the list's first and last moments, which the date hierarchy
        starts from, are read with its count (`date_range`, for `{% audit_date_hierarchy %}`)."""
        paginator = self.model_admin.get_paginator(request, self.queryset, self.list_per_page)
        self.date_range = None
        field = self.date_hierarchy
        if (
            field
            and not self.queryset.query.distinct
            and not any(self.params.get(f"{field}__{part}") for part in ("year", "month", "day"))
        ):
            found = self.queryset.aggregate(count=Count("*"), first=Min(field), last=Max(field))
            paginator.count = found["count"]
            self.date_range = (found["first"], found["last"])
        result_count = paginator.count
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
            self.result_list = list(self.queryset)
        else:
            try:
                self.result_list = list(paginator.page(self.page_num).object_list)
            except InvalidPage as exc:
                raise IncorrectLookupParameters from exc
        labels = audit_targets.target_labels(self.result_list)
        for event in self.result_list:
            event.target_words = labels[(event.target_type, event.target_id)]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit trail is evidence, nobody edits it. The search box also finds
    an order's events by its reference (KD-…), its payments' and rental's included."""

    list_display = ["created_at", "action", "target", "actor", "ip_address"]
    list_filter = ["action", "target_type"]
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
