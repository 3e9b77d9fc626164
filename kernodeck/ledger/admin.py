from django.contrib import admin

from kernodeck.core.admin_mixins import ReadOnlyAdminMixin
from kernodeck.ledger.models import LedgerEntry, TopUp


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only: the ledger is append-only. Adjustments go through the balance service."""

    list_display = [
        "account",
        "sequence",
        "kind",
        "amount_usd",
        "balance_after_usd",
        "created_at",
        "actor",
    ]
    list_filter = ["kind"]
    # `actor` may be empty, which Django's automatic select_related skips: name both.
    list_select_related = ["account", "actor"]
    search_fields = ["account__email", "memo", "order__reference"]
    date_hierarchy = "created_at"

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(TopUp)
class TopUpAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["id", "account", "amount_usd", "status", "created_at", "credited_at"]
    list_select_related = ["account"]
    list_filter = ["status", "amount_usd"]
    search_fields = ["account__email", "id"]
