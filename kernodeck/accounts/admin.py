from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.utils.translation import gettext_lazy as _

from kernodeck.accounts.models import ApiToken, SshKey, User


class UserCreationAdminForm(AdminUserCreationForm):
    class Meta:
        model = User
        fields = ["email", "first_name", "last_name"]


class UserChangeAdminForm(UserChangeForm):
    class Meta:
        model = User
        fields = "__all__"


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    add_form = UserCreationAdminForm
    form = UserChangeAdminForm
    ordering = ["-date_joined"]
    list_display = ["email", "first_name", "last_name", "is_staff", "is_active", "date_joined"]
    search_fields = ["email", "first_name", "last_name"]
    fieldsets = [
        (None, {"fields": ["email", "password"]}),
        (_("Profile"), {"fields": ["first_name", "last_name"]}),
        (_("Permissions"), {"fields": ["is_active", "is_staff", "is_superuser", "groups"]}),
        (_("Dates"), {"fields": ["last_login", "date_joined"]}),
    ]
    add_fieldsets = [
        (
            None,
            {
                "fields": [
                    "email",
                    "first_name",
                    "last_name",
                    "usable_password",
                    "password1",
                    "password2",
                ]
            },
        ),
    ]
    readonly_fields = ["last_login", "date_joined"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "created_at", "last_used_at", "revoked_at"]
    search_fields = ["user__email", "name", "prefix"]
    readonly_fields = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    exclude = ["digest"]

    def has_add_permission(self, request):
        return False


@admin.register(SshKey)
class SshKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "key_type", "bits", "fingerprint", "created_at"]
    search_fields = ["user__email", "fingerprint", "name"]
    readonly_fields = ["user", "key_type", "bits", "public_key", "fingerprint", "created_at"]

    def has_add_permission(self, request):
        return False
