"""Encryption of access secrets at rest (notebook tokens, inference API keys).

`KERNODECK_FIELD_KEYS` is a comma-separated list of Fernet keys: the first encrypts, all
decrypt, so an operator rotates by putting a new key first and re-encrypting at leisure
(`secret_rotate`). The database row only ever holds ciphertext.
"""

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext as _

from kernodeck.core.errors import Unavailable


def _fernet() -> MultiFernet:
    if not settings.KERNODECK_FIELD_KEYS:
        raise Unavailable(
            _("Secrets cannot be stored: KERNODECK_FIELD_KEYS is not configured."),
            field="token",
        )
    return MultiFernet([Fernet(key.encode()) for key in settings.KERNODECK_FIELD_KEYS])


def keys_check() -> None:
    """Fail at start-up when a configured key is not a Fernet key (none is a deploy-check
    error, see `checks.py`: the site runs, but no secret can be stored)."""
    if not settings.KERNODECK_FIELD_KEYS:
        return
    try:
        _fernet()
    except (ValueError, TypeError):
        raise ImproperlyConfigured(
            "KERNODECK_FIELD_KEYS must be comma-separated Fernet keys (32 url-safe base64 "
            "bytes each)."
        ) from None


def secret_encrypt(plaintext: str) -> str:
    """Ciphertext for a secret; an empty secret stays empty (nothing to hide)."""
    if not plaintext:
        return ""
    return _fernet().encrypt(plaintext.encode()).decode()


def secret_decrypt(ciphertext: str) -> str:
    """The secret, or "" when there is none or no configured key can read it."""
    if not ciphertext:
        return ""
    try:
        return _fernet().decrypt(ciphertext.encode()).decode()
    except (InvalidToken, Unavailable):
        return ""


def secret_rotate(ciphertext: str) -> str:
    """Re-encrypt under the first key (after a key rotation)."""
    if not ciphertext:
        return ""
    return _fernet().rotate(ciphertext.encode()).decode()
