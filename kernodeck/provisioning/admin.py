"""Read-only views of the fleet's records; every change goes through the desk's services."""

from django.contrib import admin

from kernodeck.core.admin_mixins import ReadOnlyAdminMixin
from kernodeck.provisioning.models import Allocation, Delivery, Node


class ReadOnlyChange(ReadOnlyAdminMixin):
    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Node)
class NodeAdmin(ReadOnlyChange, admin.ModelAdmin):
    list_display = ["name", "offer", "gpu_count", "host", "port", "driver", "state"]
    list_filter = ["state", "driver", "offer"]
    search_fields = ["name", "host"]


@admin.register(Allocation)
class AllocationAdmin(ReadOnlyChange, admin.ModelAdmin):
    list_display = ["order", "slot", "unit", "allocated_at", "released_at"]
    list_filter = ["released_at"]
    search_fields = ["order__reference", "slot__node__name"]


@admin.register(Delivery)
class DeliveryAdmin(ReadOnlyChange, admin.ModelAdmin):
    """Who delivered what, when — never the secret (the desk's access view is audited)."""

    list_display = ["order", "host", "port", "user", "created_by", "created_at", "revoked_at"]
    exclude = ["secret_ciphertext"]
    search_fields = ["order__reference", "host"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields if f.name != "secret_ciphertext"]
