from django.contrib import admin

from kernodeck.core.admin_mixins import ReadOnlyAdminMixin
from kernodeck.orders.models import Order


@admin.register(Order)
class OrderAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Operators see every order. Changes go through services (later issues), not edits."""

    list_display = [
        "reference",
        "owner",
        "gpu_model",
        "units",
        "days",
        "total_usd",
        "payment_state",
        "rental_state",
        "created_at",
    ]
    list_filter = ["payment_state", "rental_state", "backend", "days"]
    search_fields = ["reference", "owner__email"]
    date_hierarchy = "created_at"
    list_select_related = ["owner"]
