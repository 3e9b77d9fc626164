"""Operators' permissions read in one query per request instead of Django's two.

Django's ModelBackend reads an account's permissions in two queries (its own, then its
groups'), once per request (kept on the request's user object as `_perm_cache`). Every
back-office page of an operator who is not a superuser paid both. This backend, listed
before ModelBackend, fills the same `_perm_cache` with the same set in one query (the
account's permissions OR its groups'); ModelBackend, asked next, finds the cache filled.
It checks no password (sign-in stays ModelBackend's, asked next, so a wrong password is
hashed once); it loads a session's account as ModelBackend does (a session may name either,
as `force_login` names the first backend). It keeps nothing across requests: a permission
granted or withdrawn counts at the next request.
"""

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission
from django.db.models import Q


class OnePermissionQueryBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        return None  # ModelBackend, next in AUTHENTICATION_BACKENDS, checks passwords

    def get_all_permissions(self, user_obj, obj=None):
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None:
            return set()
        if not hasattr(user_obj, "_perm_cache"):
            perms = Permission.objects.all()
            if not user_obj.is_superuser:
                perms = perms.filter(Q(user=user_obj) | Q(group__user=user_obj))
            user_obj._perm_cache = {
                f"{app_label}.{codename}"
                for app_label, codename in perms.values_list("content_type__app_label", "codename")
            }
        return user_obj._perm_cache
