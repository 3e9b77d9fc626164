"""Shared back-office behaviour."""


class ReadOnlyAdminMixin:
    """Records written only by services (audit, transfers, ledger): view, never edit."""

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
