import unicodedata

import idna
from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models
from django.db.models.functions import Lower, Trim
from django.utils.translation import gettext_lazy as _

from kernodeck.core import clock


def normalize_local_part(local: str) -> str:
    """The part before the @ compatibility-composed and case-folded (NFKC, casefold, NFKC
    again), so look-alikes are one address: "\\u017fam" (long s), full-width letters, "SAM"
    are all "sam"."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", local).casefold())


def normalize_email(email: str) -> str:
    """The one form an address is stored and compared in: trimmed, the local part folded
    (`normalize_local_part`), and the domain lower-case in its ASCII (IDNA/punycode) form,
    so "ana@café.example" and "ana@xn--caf-dma.example" are one account. A domain IDNA
    refuses is kept as typed (lower-case), for the email validator to refuse."""
    email = (email or "").strip()
    local, at, domain = email.rpartition("@")
    if not at:
        return email.lower()
    local, domain = normalize_local_part(local), domain.lower()
    email = f"{local}@{domain}"
    if not domain or domain.isascii():
        return email
    try:
        domain = idna.encode(domain, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return email
    return f"{local}@{domain}"


class UserManager(BaseUserManager):
    use_in_migrations = True

    def get_by_natural_key(self, email):
        return self.get(email=normalize_email(email))

    def create_user(self, email, password=None, **fields):
        user = self.model(email=normalize_email(email), **fields)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email, password=None, **fields):
        fields.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    """A Kernodeck account: email and password are the login, no external identity."""

    email = models.EmailField(_("email"), max_length=254, unique=True)
    first_name = models.CharField(_("first name"), max_length=150)
    last_name = models.CharField(_("last name"), max_length=150)
    is_active = models.BooleanField(default=True, verbose_name=_("active"))
    is_staff = models.BooleanField(
        default=False,
        help_text=_("Operators: may sign in to the back-office."),
        verbose_name=_("staff"),
    )
    date_joined = models.DateTimeField(default=clock.now, verbose_name=_("date joined"))
    preferred_language = models.CharField(
        max_length=8,
        choices=settings.LANGUAGES,
        default="es",
        help_text=_("The language of e-mails: set at registration, sign-in and language switch."),
        verbose_name=_("preferred language"),
    )

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS = ["first_name", "last_name"]

    class Meta:
        verbose_name_plural = _("accounts")
        verbose_name = _("account")
        constraints = [
            # Stored normalised, so the unique index compares without case.
            models.CheckConstraint(
                condition=models.Q(email=Lower(Trim("email"))),
                name="accounts_user_email_normalised",
            ),
        ]

    def __str__(self):
        return self.email

    def get_full_name(self):
        return f"{self.first_name} {self.last_name}".strip()

    def get_short_name(self):
        return self.first_name


class Session(AbstractBaseSession):
    """A database session that knows its account, so we can list and end them."""

    user = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.CASCADE, related_name="sessions"
    )
    user_agent = models.CharField(max_length=300, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    last_seen = models.DateTimeField(null=True, blank=True)

    @classmethod
    def get_session_store_class(cls):
        # Imported here, as Django's own db session backend does: the store imports this model.
        from kernodeck.accounts.sessions import SessionStore

        return SessionStore


class ApiToken(models.Model):
    """A personal API token. Only a SHA-256 digest of the secret is stored."""

    user = models.ForeignKey(
        User, on_delete=models.CASCADE, related_name="api_tokens", verbose_name=_("account")
    )
    name = models.CharField(_("name"), max_length=80)
    prefix = models.CharField(
        max_length=12,
        help_text=_("The first characters, for recognition."),
        verbose_name=_("prefix"),
    )
    digest = models.CharField(max_length=64, unique=True, verbose_name=_("digest"))
    created_at = models.DateTimeField(verbose_name=_("created at"))
    last_used_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last used at"))
    revoked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("revoked at"))

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self):
        return self.revoked_at is None


class SshKey(models.Model):
    """An SSH public key that provisioning installs on the customer's machines."""

    class KeyType(models.TextChoices):
        ED25519 = "ssh-ed25519", "Ed25519"
        ECDSA = "ecdsa", "ECDSA"
        RSA = "ssh-rsa", "RSA"

    user = models.ForeignKey(
        User, on_delete=models.CASCADE, related_name="ssh_keys", verbose_name=_("account")
    )
    name = models.CharField(_("name"), max_length=80)
    key_type = models.CharField(max_length=16, choices=KeyType.choices, verbose_name=_("key type"))
    bits = models.PositiveIntegerField(verbose_name=_("bits"))
    public_key = models.TextField(
        help_text=_("The key in OpenSSH format, without its comment."),
        verbose_name=_("public key"),
    )
    fingerprint = models.CharField(max_length=64, verbose_name=_("fingerprint"))
    created_at = models.DateTimeField(verbose_name=_("created at"))

    class Meta:
        verbose_name = _("SSH key")
        verbose_name_plural = _("SSH keys")
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "fingerprint"], name="accounts_sshkey_user_fingerprint_unique"
            ),
        ]

    def __str__(self):
        return f"{self.name} {self.fingerprint}"
