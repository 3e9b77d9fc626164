"""Account actions: the only code that writes accounts, tokens, keys and sessions."""

import functools
import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils.http import urlsafe_base64_decode
from django.utils.translation import gettext as _

from kernodeck.accounts import throttle
from kernodeck.accounts.models import ApiToken, Session, SshKey, User, normalize_email
from kernodeck.accounts.sessions import sessions_forget_ended
from kernodeck.accounts.ssh_keys import parse_public_key
from kernodeck.core import clock, rows
from kernodeck.core.errors import Conflict, InvalidInput, NotFound, Throttled, Unauthenticated
from kernodeck.core.inputs import MAX_EMAIL_LENGTH
from kernodeck.core.services import audit_record

TOKEN_PREFIX = "kd_"  # noqa: S105 - a marker, not a secret
MAX_ACTIVE_TOKENS = 20
MAX_SSH_KEYS = 20
_LANGUAGE_CODES = frozenset(code for code, _name in settings.LANGUAGES)


def registration_answer_message() -> str:
    # The one answer to every accepted registration, new address or not: it says nothing
    # about whether an account had the address, and nobody is signed in by registering.
    return _(
        "If this address is new, your account is ready: sign in with the password you "
        "just chose. If it already had an account, sign in with that account's password, "
        "or use “I can't sign in”."
    )


def signin_failed_message() -> str:
    return _("The email or the password is not correct.")


def _check_names(first_name: str, last_name: str) -> tuple[str, str]:
    first_name, last_name = (first_name or "").strip(), (last_name or "").strip()
    if not first_name:
        raise InvalidInput(_("Enter your first name."), field="first_name")
    if not last_name:
        raise InvalidInput(_("Enter your last name."), field="last_name")
    for field, value in (("first_name", first_name), ("last_name", last_name)):
        if len(value) > 150:
            raise InvalidInput(_("Names are limited to 150 characters."), field=field)
    return first_name, last_name


def account_register(
    *,
    first_name: str,
    last_name: str,
    email: str,
    password: str,
    ip_address: str,
    language: str | None = None,
) -> User | None:
    """Create an account, or do nothing visible when the address has one already.

    Returns the new account, or None for a taken address — which callers must answer
    exactly like a new one (`registration_answer_message`): the same page, the same
    status, nobody signed in, the existing account untouched. The password is checked and
    hashed in both cases, so the work done does not tell them apart either.
    `language` (the one active while registering) becomes the language of its e-mails.
    """
    # Counted before anything else, so concurrent registrations cannot slip past the limit.
    throttle.attempt(
        "register_ip", ip_address, message=_("Too many registrations from your network.")
    )

    first_name, last_name = _check_names(first_name, last_name)
    email = normalize_email(email)
    if len(email) > MAX_EMAIL_LENGTH:
        raise InvalidInput(
            _("Email addresses are limited to %(n)d characters.") % {"n": MAX_EMAIL_LENGTH},
            field="email",
        )
    try:
        validate_email(email)
    except ValidationError:
        raise InvalidInput(_("Enter a valid email address."), field="email") from None

    candidate = User(email=email, first_name=first_name, last_name=last_name)
    if language in _LANGUAGE_CODES:
        candidate.preferred_language = language
    try:
        validate_password(password, user=candidate)
    except ValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="password") from None

    candidate.set_password(password)
    existing = User.objects.filter(email=email).first()
    if existing is not None:
        _register_taken(existing=existing, ip_address=ip_address)
        return None
    try:
        with transaction.atomic():
            candidate.save()
            audit_record(
                action="account.registered",
                target=candidate,
                actor=candidate,
                after={"email": candidate.email},
                ip_address=ip_address,
            )
    except IntegrityError:
        # Lost a race with a registration of the same address: the same answer.
        existing = User.objects.filter(email=email).first()
        if existing is not None:
            _register_taken(existing=existing, ip_address=ip_address)
        return None
    return candidate


def _register_taken(*, existing: User, ip_address: str) -> None:
    """A registration with an address that has an account: recorded for operators, and
    nothing else — the account is not touched and the caller answers as for a new one."""
    audit_record(
        action="account.register_taken",
        target=existing,
        data={"email": existing.email},
        ip_address=ip_address,
    )


def account_authenticate(*, email: str, password: str, ip_address: str, request=None) -> User:
    """Check a sign-in. Failed attempts count per account and per address."""
    email = normalize_email(email)
    # Every attempt is counted atomically before the password is hashed: with 40 requests
    # in flight at once, only the first `limit` reach the hash. A success gives its
    # attempts back (and clears the account's count), so only failures stay counted.
    throttle.attempt(
        "signin_ip", ip_address, message=_("Too many failed sign-ins from your network.")
    )
    try:
        throttle.attempt(
            "signin_account", email, message=_("Too many failed sign-ins for this account.")
        )
    except Throttled:
        throttle.refund("signin_ip", ip_address)
        raise

    # An address no account can have fails like any wrong pair (no hash, no query).
    user = (
        authenticate(request, email=email, password=password)
        if len(email) <= MAX_EMAIL_LENGTH
        else None
    )
    if user is None:
        known = User.objects.filter(email=normalize_email(email)).first()
        audit_record(
            action="account.signin_failed",
            target_type="accounts.user",
            target_id=str(known.pk) if known else "",
            data={"email": email[:254]},
            ip_address=ip_address,
        )
        raise Unauthenticated(signin_failed_message())

    throttle.reset("signin_account", email)
    throttle.refund("signin_ip", ip_address)
    audit_record(action="account.signed_in", target=user, actor=user, ip_address=ip_address)
    return user


def account_language_set(*, user: User, language: str) -> User:
    """Remember the language the account uses on the site, for its e-mails.

    Called at sign-in and from the language switch; an unknown code changes nothing.
    """
    if language not in _LANGUAGE_CODES or user.preferred_language == language:
        return user
    with transaction.atomic():
        before = user.preferred_language
        user.preferred_language = language
        user.save(update_fields=["preferred_language"])
        audit_record(
            action="account.language_changed",
            target=user,
            actor=user,
            before={"preferred_language": before},
            after={"preferred_language": language},
        )
    return user


def profile_update(*, user: User, first_name: str, last_name: str) -> User:
    first_name, last_name = _check_names(first_name, last_name)
    before = {"first_name": user.first_name, "last_name": user.last_name}
    after = {"first_name": first_name, "last_name": last_name}
    if before == after:
        return user
    with transaction.atomic():
        user.first_name, user.last_name = first_name, last_name
        user.save(update_fields=["first_name", "last_name"])
        audit_record(
            action="account.profile_changed", target=user, actor=user, before=before, after=after
        )
    return user


def password_change(
    *, user: User, current_password: str, new_password: str, keep_api_tokens: bool = False
) -> User:
    """Change the password after checking the current one.

    Other sessions stop being valid (Django's session hash); the account's API tokens are
    revoked too, unless the customer ticks "keep my API tokens" on the form: a password
    change after a leak must end every way in, and a token made with the old password is
    one of them."""
    if not user.check_password(current_password):
        raise InvalidInput(_("Your current password is not correct."), field="current_password")
    try:
        validate_password(new_password, user=user)
    except ValidationError as exc:
        raise InvalidInput(" ".join(exc.messages), field="new_password") from None
    with transaction.atomic():
        user.set_password(new_password)
        user.save(update_fields=["password"])
        revoked = 0
        if not keep_api_tokens:
            revoked = ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(
                revoked_at=clock.now()
            )
        audit_record(
            action="account.password_changed",
            target=user,
            actor=user,
            data={"api_tokens_revoked": revoked, "api_tokens_kept": bool(keep_api_tokens)},
        )
    user.api_tokens_revoked = revoked
    return user


def password_reset_by_staff(*, user: User, actor) -> User:
    """Staff, having checked who asked ("I can't sign in"), end every way into the account.

    The password becomes unusable (the old one fails from now on), every session of the
    account is ended and every API token revoked, in one audited transaction. The person
    then chooses a new password on the single-use page e-mailed to the account's address
    (`password_link_user`, `password_set_with_link`); the caller sends that e-mail.
    """
    with transaction.atomic():
        user = User.objects.select_for_update().get(pk=user.pk)
        user.set_unusable_password()
        user.save(update_fields=["password"])
        sessions = _sessions_end(Session.objects.filter(user=user))
        tokens = ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(
            revoked_at=clock.now()
        )
        audit_record(
            action="account.password_reset_by_staff",
            target=user,
            actor=actor,
            data={"sessions_ended": sessions, "api_tokens_revoked": tokens},
        )
    return user


def password_link_user(*, uidb64: str, token: str) -> User | None:
    """The account a new-password link was made for, while the link still works: it dies
    once the password changes (so after one use), and after PASSWORD_RESET_TIMEOUT."""
    try:
        pk = int(urlsafe_base64_decode(uidb64 or "").decode())
    except (TypeError, ValueError, OverflowError, UnicodeDecodeError):
        return None
    user = User.objects.filter(pk=pk, is_active=True).first()
    if user is None or not default_token_generator.check_token(user, token or ""):
        return None
    return user


def password_set_with_link(*, uidb64: str, token: str, new_password: str, ip_address: str) -> User:
    """Set the password chosen on the page of a new-password link (single use)."""
    with transaction.atomic():
        user = password_link_user(uidb64=uidb64, token=token)
        if user is not None:
            user = User.objects.select_for_update().get(pk=user.pk)
        # Checked again under the lock: two submissions of one link set one password.
        if user is None or not default_token_generator.check_token(user, token or ""):
            raise NotFound(password_link_dead_message())
        try:
            validate_password(new_password, user=user)
        except ValidationError as exc:
            raise InvalidInput(" ".join(exc.messages), field="new_password") from None
        user.set_password(new_password)
        user.save(update_fields=["password"])
        _sessions_end(Session.objects.filter(user=user))
        audit_record(
            action="account.password_set_from_link",
            target=user,
            actor=user,
            ip_address=ip_address,
        )
    return user


def password_link_dead_message() -> str:
    return _(
        "This link no longer works: it was used already, a newer one was sent, or it is "
        "too old. Ask again with “I can't sign in”."
    )


def _sessions_end(queryset) -> int:
    """Delete these sessions and have the session engine forget them (a cached copy of an
    ended session must not sign its browser in); return how many.

    The rows deleted are the ones read here: a session that starts meanwhile is neither
    deleted nor forgotten, so its row and its cached copy agree."""
    keys = list(queryset.values_list("session_key", flat=True))
    if not keys:
        return 0
    # Forgotten first: if the cache fails, nothing is deleted (the caller's transaction
    # rolls back) and the action fails visibly, instead of copies outliving their rows.
    sessions_forget_ended(keys)
    ended, _detail = Session.objects.filter(session_key__in=keys).delete()
    return ended


def sessions_end_others(*, user: User, current_session_key: str) -> int:
    """Sign the account out of every browser but this one; return how many were ended."""
    with transaction.atomic():
        ended = _sessions_end(
            Session.objects.filter(user=user).exclude(session_key=current_session_key)
        )
        if ended:
            audit_record(
                action="account.sessions_ended", target=user, actor=user, data={"count": ended}
            )
    return ended


def _digest(raw_token: str) -> str:
    return hashlib.sha256(raw_token.encode()).hexdigest()


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret, which is never stored nor shown again."""
    name = (name or "").strip()
    if not name:
        raise InvalidInput(
            _("Give the token a name, e.g. the machine that will use it."), field="name"
        )
    if len(name) > 80:
        raise InvalidInput(_("Token names are limited to 80 characters."), field="name")
    with transaction.atomic():
        User.objects.select_for_update().filter(pk=user.pk).first()
        active = ApiToken.objects.filter(user=user, revoked_at__isnull=True).count()
        if active >= MAX_ACTIVE_TOKENS:
            raise Conflict(
                _("You already have %(n)d active tokens; revoke one first.") % {"n": active},
                field="name",
            )
        raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = ApiToken.objects.create(
            user=user, name=name, prefix=raw[:10], digest=_digest(raw), created_at=clock.now()
        )
        audit_record(
            action="account.token_created", target=token, actor=user, after={"name": name}
        )
    return token, raw


def api_token_revoke(*, user: User, token_id: int) -> ApiToken:
    with transaction.atomic():
        token = ApiToken.objects.select_for_update().filter(user=user, pk=token_id).first()
        if token is None:
            raise NotFound(_("No such token."))
        if token.revoked_at is not None:
            return token
        token.revoked_at = clock.now()
        token.save(update_fields=["revoked_at"])
        audit_record(
            action="account.token_revoked", target=token, actor=user, after={"name": token.name}
        )
    return token


# Of the token, only what the check uses (its id, its last use): no ApiToken instance.
_TOKEN = rows.Columns(ApiToken, "t", ("id", "last_used_at"), epoch_datetimes=True)
_TOKEN_USER = rows.Columns(User, "u", epoch_datetimes=True)


@functools.cache
def _token_statement(vendor: str) -> str:
    # The column lists come from the models, never from input.
    return (
        f"SELECT {_TOKEN.sql()}, {_TOKEN_USER.sql()} FROM accounts_apitoken t "  # noqa: S608
        "JOIN accounts_user u ON u.id = t.user_id "
        "WHERE t.digest = %s AND t.revoked_at IS NULL AND u.is_active = %s"
    )


def api_token_authenticate(raw_token: str) -> User | None:
    """Return the active account behind a bearer token, or None."""
    if not raw_token or not raw_token.startswith(TOKEN_PREFIX) or len(raw_token) > 100:
        return None
    # Every API request asks this: a statement written once, not a queryset built each time.
    with rows.prepared_cursor() as cursor:
        cursor.execute(_token_statement(connection.vendor), [_digest(raw_token), True])
        row = cursor.fetchone()
    if row is None:
        return None
    token_id, last = _TOKEN.converter(connection)(row[: len(_TOKEN)])
    user = _TOKEN_USER.load(row[len(_TOKEN) :])
    # The row just read says whether a minute has passed: most requests skip the UPDATE.
    # The UPDATE itself re-checks, so concurrent requests still write at most once.
    if last is None or last < clock.now() - TOKEN_USE_PRECISION:
        api_token_mark_used(token_id=token_id)
    return user


# `last_used_at` is for people ("used 3 minutes ago"), so a minute's precision is enough.
TOKEN_USE_PRECISION = timedelta(minutes=1)


def api_token_mark_used(*, token_id: int) -> bool:
    """Record that a token was used now, at most once a minute.

    One conditional UPDATE (no read first): under a burst of API calls only the first
    request of each minute writes the row, the others match nothing, so concurrent requests
    neither queue on the row's lock every time nor overwrite a newer time with an older one.
    Returns whether the row was written.
    """
    now = clock.now()
    return bool(
        ApiToken.objects.filter(pk=token_id)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - TOKEN_USE_PRECISION))
        .update(last_used_at=now)
    )


def api_token_issue(*, email: str, password: str, ip_address: str) -> str:
    """Sign in with email and password and return a new token (POST /auth/token)."""
    user = account_authenticate(email=email, password=password, ip_address=ip_address)
    _token, raw = api_token_create(
        user=user,
        name=_("API sign-in %(date)s") % {"date": clock.now().strftime("%Y-%m-%d %H:%M UTC")},
    )
    return raw


def ssh_key_add(*, user: User, public_key: str, name: str = "") -> SshKey:
    parsed = parse_public_key(public_key)
    name = (name or "").strip() or parsed.comment or parsed.key_type
    if len(name) > 80:
        raise InvalidInput(_("Key names are limited to 80 characters."), field="name")
    try:
        with transaction.atomic():
            if SshKey.objects.filter(user=user).count() >= MAX_SSH_KEYS:
                raise Conflict(
                    _("You already have %(n)d keys; remove one first.") % {"n": MAX_SSH_KEYS},
                    field="public_key",
                )
            key = SshKey.objects.create(
                user=user,
                name=name,
                key_type=parsed.key_type,
                bits=parsed.bits,
                public_key=parsed.public_key,
                fingerprint=parsed.fingerprint,
                created_at=clock.now(),
            )
            audit_record(
                action="account.ssh_key_added",
                target=key,
                actor=user,
                after={"name": name, "fingerprint": parsed.fingerprint},
            )
    except IntegrityError:
        raise Conflict(_("This key is already on your account."), field="public_key") from None
    return key


def ssh_key_remove(*, user: User, key_id: int) -> None:
    with transaction.atomic():
        key = SshKey.objects.select_for_update().filter(user=user, pk=key_id).first()
        if key is None:
            raise NotFound(_("No such key."))
        audit_record(
            action="account.ssh_key_removed",
            target=key,
            actor=user,
            before={"name": key.name, "fingerprint": key.fingerprint},
        )
        key.delete()


def sessions_clear_expired() -> None:
    Session.get_session_store_class().clear_expired()
