"""Deployment checks of the provisioning app (`kernodeck check --deploy`)."""

from django.conf import settings
from django.core.checks import Error, register


@register(deploy=True)
def field_keys_check(app_configs, **kwargs):
    if settings.KERNODECK_FIELD_KEYS:
        return []
    return [
        Error(
            "KERNODECK_FIELD_KEYS is not set: access secrets (notebook tokens, inference API "
            "keys) cannot be stored.",
            hint="Generate one with: python3 -c 'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())'",
            id="provisioning.E001",
        )
    ]
