"""Account endpoints of the JSON API and its bearer-token authentication."""

from datetime import datetime

from django.utils.translation import get_language
from ninja import Field, Router, Schema, Status
from ninja.security import HttpBearer

from kernodeck.accounts import selectors, services
from kernodeck.core.inputs import MAX_EMAIL_LENGTH
from kernodeck.core.requests import client_ip
from kernodeck.core.schemas import InputSchema


class TokenAuth(HttpBearer):
    """`Authorization: Bearer kd_…` with a personal API token."""

    def authenticate(self, request, token):
        user = services.api_token_authenticate(token)
        if user is not None:
            request.user = user
        return user


router = Router(tags=["auth"])


class RegisterIn(InputSchema):
    first_name: str = Field(min_length=1, max_length=150)
    last_name: str = Field(min_length=1, max_length=150)
    email: str = Field(max_length=MAX_EMAIL_LENGTH, json_schema_extra={"format": "email"})
    password: str = Field(
        max_length=1024, description="15 to 128 characters; checked with the rule's words."
    )


class RegisterOut(Schema):
    detail: str = Field(
        description="The same words for a new address and for one that has an account."
    )


class TokenIn(InputSchema):
    email: str = Field(max_length=1024)
    password: str = Field(max_length=1024)


class TokenOut(Schema):
    token: str


@router.post("/register", auth=None, response={202: RegisterOut})
def register(request, payload: RegisterIn):
    """Create an account, then exchange email and password at `POST /auth/token`.

    A new address and one that has an account get the same answer (202, the same words):
    the answer never confirms that an account exists, and a taken address grants nothing.
    """
    services.account_register(
        **payload.dict(), ip_address=client_ip(request), language=get_language()
    )
    return Status(202, {"detail": services.registration_answer_message()})


@router.post("/token", auth=None, response=TokenOut)
def token(request, payload: TokenIn):
    """Exchange email and password for a new personal API token (shown once)."""
    raw = services.api_token_issue(
        email=payload.email, password=payload.password, ip_address=client_ip(request)
    )
    return {"token": raw}


class MeOut(Schema):
    id: int
    email: str
    first_name: str
    last_name: str


@router.get("/me", response=MeOut)
def me(request):
    """The account behind the token."""
    return request.auth


# -- SSH public keys (mounted at the API root: /ssh-keys) ------------------------------

keys_router = Router(tags=["ssh keys"])


class SshKeyIn(InputSchema):
    public_key: str
    name: str = ""


class SshKeyOut(Schema):
    id: int
    name: str
    key_type: str
    bits: int
    fingerprint: str
    public_key: str
    created_at: datetime


@keys_router.get("/ssh-keys", response=list[SshKeyOut])
def ssh_key_list(request):
    """Your SSH public keys: provisioning installs them on your rentals' machines."""
    return list(selectors.ssh_keys_for(user=request.auth))


@keys_router.post("/ssh-keys", response={201: SshKeyOut})
def ssh_key_create(request, payload: SshKeyIn):
    """Add an OpenSSH public key (Ed25519, ECDSA or RSA of 3072 bits or more)."""
    key = services.ssh_key_add(user=request.auth, public_key=payload.public_key, name=payload.name)
    return Status(201, key)


@keys_router.delete("/ssh-keys/{key_id}", response={204: None})
def ssh_key_delete(request, key_id: int):
    """Remove a key from your account (machines already delivered keep it until they end)."""
    services.ssh_key_remove(user=request.auth, key_id=key_id)
    return Status(204, None)
