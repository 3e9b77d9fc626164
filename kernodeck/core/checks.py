"""Deployment checks (`kernodeck check --deploy`): settings that make a production set-up
unsafe or unusable are errors, so the command exits non-zero.

Django's own deploy checks only warn about some of these (security.W009, W018, W020); the
errors here make the same facts stop a deployment script. The README ("Deploy checks")
lists every id with what to do about it; KERNODECK_FIELD_KEYS is checked by the
provisioning app (provisioning.E001).
"""

from django.conf import settings
from django.core.checks import Error, Info, Tags, register

from kernodeck.core import defaults

SECRET_KEY_MIN_LENGTH = 50  # Django's rule for security.W009
SECRET_KEY_MIN_UNIQUE = 5
HOW_TO_GENERATE = "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"


@register(Tags.security, deploy=True)
def allowed_hosts_check(app_configs, **kwargs):
    if settings.ALLOWED_HOSTS:
        return []
    return [
        Error(
            "KERNODECK_ALLOWED_HOSTS is empty: every request would be refused (400).",
            hint="Set it to the site's host names, comma-separated, e.g. gpu.example.org.",
            id="kernodeck.E001",
        )
    ]


@register(Tags.security, deploy=True)
def secret_key_check(app_configs, **kwargs):
    key = settings.SECRET_KEY
    if key == defaults.DEVELOPMENT_SECRET_KEY or key.startswith("django-insecure-"):
        return [
            Error(
                "KERNODECK_SECRET_KEY is the public development key: anyone could forge "
                "sessions and signed values.",
                hint=f"Set a new random key, e.g. from: {HOW_TO_GENERATE}",
                id="kernodeck.E003",
            )
        ]
    if len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < SECRET_KEY_MIN_UNIQUE:
        return [
            Error(
                f"KERNODECK_SECRET_KEY is too weak: it needs at least {SECRET_KEY_MIN_LENGTH} "
                f"characters and {SECRET_KEY_MIN_UNIQUE} different ones (it has {len(key)} "
                f"and {len(set(key))}).",
                hint=f"Set a new random key, e.g. from: {HOW_TO_GENERATE}",
                id="kernodeck.E002",
            )
        ]
    return []


@register(Tags.security, deploy=True)
def development_modes_check(app_configs, **kwargs):
    errors = []
    if settings.DEBUG:
        errors.append(
            Error(
                "KERNODECK_DEBUG is on: error pages would show settings and source code.",
                hint="Unset KERNODECK_DEBUG (or set it to off).",
                id="kernodeck.E004",
            )
        )
    if defaults.DEVELOPMENT_FIELD_KEY in settings.KERNODECK_FIELD_KEYS:
        errors.append(
            Error(
                "KERNODECK_FIELD_KEYS holds the public development key: secrets encrypted "
                "with it are readable by anyone.",
                hint="Generate a key of your own (see the README) and put it in place of "
                "the development one.",
                id="kernodeck.E006",
            )
        )
    if settings.KERNODECK_DEMO:
        errors.append(
            Error(
                "KERNODECK_DEMO is on: demo data, demo rates and the public test wallets "
                "would be offered to customers.",
                hint="Unset KERNODECK_DEMO; run the demo with `kernodeck demo` only.",
                id="kernodeck.E007",
            )
        )
    if not settings.KERNODECK_THROTTLE:
        errors.append(
            Error(
                "KERNODECK_THROTTLE is off: sign-in and registration are not rate-limited.",
                hint="Unset KERNODECK_THROTTLE; it is off only for load tests and scripts.",
                id="kernodeck.E008",
            )
        )
    return errors


@register(Tags.security, deploy=True)
def https_check(app_configs, **kwargs):
    if settings.KERNODECK_HTTPS:
        return []
    if settings.KERNODECK_HTTPS_OFF_REASON:
        return [
            Info(
                "KERNODECK_HTTPS is off: cookies are not marked secure and there is no "
                f"HTTPS redirect or HSTS. Stated reason: {settings.KERNODECK_HTTPS_OFF_REASON}",
                id="kernodeck.I001",
            )
        ]
    return [
        Error(
            "KERNODECK_HTTPS is off: session cookies and passwords would travel in clear "
            "text, with no HTTPS redirect and no HSTS.",
            hint="Put a TLS proxy in front that sets X-Forwarded-Proto and unset "
            "KERNODECK_HTTPS. If plain HTTP is really intended (e.g. a private network "
            "only), say why in KERNODECK_HTTPS_OFF_REASON.",
            id="kernodeck.E005",
        )
    ]
