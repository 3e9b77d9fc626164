"""Operators' permissions: one decorator protects a back-office view, one call an action.

Here, in accounts, because every domain's desk views use them and no domain imports the
back-office.

Every back-office screen and action names the Django permission it needs
(`app_label.codename`, declared in `Meta.permissions` of the app's model). Anonymous
visitors are sent to the sign-in page; a signed-in account without the permission gets the
403 page — never a redirect back to the sign-in page it already passed.

    @permission_required("payments.review_payment")
    def review_queue(request): ...

    require_permission(request, "ledger.adjust_balance")   # inside a view, per action
"""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied


def has_permissions(user, *perms: str) -> bool:
    """Active staff holding every permission in `perms` (superusers hold them all)."""
    return bool(
        user.is_authenticated and user.is_active and user.is_staff and user.has_perms(perms)
    )


def require_permission(request, *perms: str) -> None:
    """Refuse (403) the current action unless the operator holds `perms`."""
    if not has_permissions(request.user, *perms):
        raise PermissionDenied


def permission_required(*perms: str):
    """Protect a back-office view with named permissions (403 for accounts without them).

    The view records what it needs in `view.backoffice_permissions`, which the permission
    matrix test reads for every back-office URL.
    """

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            require_permission(request, *perms)
            return view(request, *args, **kwargs)

        wrapped.backoffice_permissions = perms
        return wrapped

    return decorator
