"""Back-office set-up: the "Operators" group and its permissions."""

from django.apps import apps
from django.contrib.auth.management import create_permissions
from django.contrib.auth.models import Group, Permission
from django.db import transaction

from kernodeck.core.services import audit_record

OPERATORS_GROUP = "Operators"
DEFAULT_ACTIONS = ("add", "change", "delete", "view")
# Default permissions operators need beyond viewing: switching payment methods on and off.
EXTRA = {("payments", "change_paymentmethod")}


def backoffice_permissions() -> list[Permission]:
    """Every permission an operator needs: each Kernodeck app's custom permissions (the
    named back-office actions, e.g. `payments.review_payment`) and viewing every model.

    New apps' custom permissions join automatically, so a new desk only declares them in
    its model's `Meta.permissions`.
    """
    kernodeck_apps = [
        config for config in apps.get_app_configs() if config.name.startswith("kernodeck.")
    ]
    for config in kernodeck_apps:
        create_permissions(config, verbosity=0)  # also before the first post-migrate run
    labels = [config.label for config in kernodeck_apps]
    wanted = []
    for permission in Permission.objects.filter(content_type__app_label__in=labels).select_related(
        "content_type"
    ):
        action = permission.codename.split("_", 1)[0]
        key = (permission.content_type.app_label, permission.codename)
        if action == "view" or action not in DEFAULT_ACTIONS or key in EXTRA:
            wanted.append(permission)
    return wanted


def operators_group_ensure() -> Group:
    """Create or complete the "Operators" group with the back-office permissions."""
    with transaction.atomic():
        group, _created = Group.objects.get_or_create(name=OPERATORS_GROUP)
        missing = set(backoffice_permissions()) - set(group.permissions.all())
        if missing:
            group.permissions.add(*missing)
            audit_record(
                action="backoffice.operators_group_updated",
                target_type="auth.group",
                target_id=str(group.pk),
                after={"added": sorted(p.codename for p in missing)},
            )
    return group
