from kernodeck.accounts.models import ApiToken, Session, SshKey, User
from kernodeck.core import clock


def sessions_active_for(*, user: User):
    return Session.objects.filter(user=user, expire_date__gt=clock.now()).order_by("-last_seen")


def api_tokens_for(*, user: User):
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at")


def ssh_keys_for(*, user: User):
    return SshKey.objects.filter(user=user)


def api_token_get(*, user: User, token_id: int) -> ApiToken | None:
    return ApiToken.objects.filter(user=user, pk=token_id).first()


def ssh_key_get(*, user: User, key_id: int) -> SshKey | None:
    return SshKey.objects.filter(user=user, pk=key_id).first()
