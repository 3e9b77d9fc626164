"""The back-office admin site: Django's admin, closed to accounts without permissions."""

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import PermissionDenied
from django.urls import get_script_prefix, get_urlconf
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

# The lists of apps and models made, by what they are made of (see `_apps`).
APP_LISTS: dict[tuple, list] = {}
APP_LISTS_KEPT = 64


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

    def get_app_list(self, request, app_label=None):
        """The admin's, made once per account permissions, language and URLs rather than
        on every page (each page's navigation sidebar reads it, and the dashboard): about
        40 permission checks and URL reversals and two translated sorts. The lists are
        shared: read them, do not change them."""
        if app_label is not None:
            return super().get_app_list(request, app_label)
        return self._apps(request)

    def _apps(self, request) -> list:
        """get_app_list(request) of every app. What it reads is the site's registry (fixed
        once the project has loaded), the account's permissions through `has_perm` and
        `has_module_perms` (ModelBackend: active, superuser, and the set of permissions;
        no model admin here decides by anything else; a model admin registered later is
        missing from the lists already made), the language (the names sort in
        it) and the URL configuration and prefix its links are reversed with."""
        user = request.user
        key = (
            get_language(),
            get_script_prefix(),
            get_urlconf(),
            user.is_active,
            user.is_superuser,
            # A superuser's are all (has_perm answers yes without them), read no further.
            frozenset(
                user.get_all_permissions() if user.is_active and not user.is_superuser else ()
            ),
        )
        apps = APP_LISTS.get(key)
        if apps is None:
            apps = super().get_app_list(request)
            if len(APP_LISTS) >= APP_LISTS_KEPT:
                APP_LISTS.clear()
            APP_LISTS[key] = apps
        return list(apps)

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
