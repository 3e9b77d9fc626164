from django.contrib import admin

from kernodeck.core.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the audit trail is evidence, nobody edits it."""

    list_display = ["created_at", "action", "actor", "target_type", "target_id", "ip_address"]
    list_filter = ["action", "target_type"]
    # `actor` may be empty (system events), which Django's automatic select_related skips.
    list_select_related = ["actor"]
    search_fields = ["action", "target_id", "actor__email"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
