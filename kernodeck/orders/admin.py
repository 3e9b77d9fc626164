from django.contrib import admin

from kernodeck.orders.models import Order


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
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

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
