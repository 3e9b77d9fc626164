"""The back-office admin site: Django's admin, closed to accounts without permissions."""

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext_lazy as _


class BackofficeSite(admin.AdminSite):
    """The admin at /backoffice/. A signed-in customer, or staff holding no permission at
    all, gets the 403 page: the stock admin would redirect them to its login page, which
    sends signed-in accounts straight back (a redirect loop)."""

    site_header = _("Kernodeck back-office")
    site_title = _("Kernodeck back-office")
    # The admin's "View site" link leads to the operators' landing page, not the shop.
    site_url = "/backoffice/"
    # Unknown back-office paths answer 404 instead of redirecting to the sign-in page.
    final_catch_all_view = False

    def has_permission(self, request):
        user = request.user
        return bool(
            user.is_active and user.is_staff and (user.is_superuser or user.get_all_permissions())
        )

    def index(self, request, extra_context=None):
        """The landing page is the operators' dashboard (dashboard.py), which also lists
        the model pages this account may open."""
        # Imported here: this site is built while Django loads the apps (admin's default
        # site), before the models the dashboard reads exist.
        from kernodeck.backoffice.dashboard import dashboard_page

        return dashboard_page(
            request, app_list=self.get_app_list(request), site_header=self.site_header
        )

    def app_index(self, request, app_label, extra_context=None):
        # 403 like every other refused back-office page (the stock admin answers 404).
        if not request.user.has_module_perms(app_label):
            raise PermissionDenied
        return super().app_index(request, app_label, extra_context)

    def admin_view(self, view, cacheable=False):
        protected = super().admin_view(view, cacheable)

        def inner(request, *args, **kwargs):
            if request.user.is_authenticated and not self.has_permission(request):
                raise PermissionDenied
            return protected(request, *args, **kwargs)

        inner.__wrapped__ = view
        for attribute in ("csrf_exempt", "login_url"):
            if hasattr(protected, attribute):
                setattr(inner, attribute, getattr(protected, attribute))
        return inner


class BackofficeAdminConfig(AdminConfig):
    """Installs BackofficeSite as `django.contrib.admin.site`."""

    default_site = "kernodeck.backoffice.sites.BackofficeSite"
