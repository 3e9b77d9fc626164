"""Account endpoints of the JSON API and its bearer-token authentication."""

from django.utils.translation import get_language
from ninja import Router, Schema, Status
from ninja.security import HttpBearer

from kernodeck.accounts import services
from kernodeck.core.requests import client_ip


class TokenAuth(HttpBearer):
    """`Authorization: Bearer kd_…` with a personal API token."""

    def authenticate(self, request, token):
        user = services.api_token_authenticate(token)
        if user is not None:
            request.user = user
        return user


router = Router(tags=["auth"])


class RegisterIn(Schema):
    first_name: str
    last_name: str
    email: str
    password: str


class RegisterOut(Schema):
    id: int
    email: str


class TokenIn(Schema):
    email: str
    password: str


class TokenOut(Schema):
    token: str


@router.post("/register", auth=None, response={201: RegisterOut})
def register(request, payload: RegisterIn):
    """Create an account. A taken email answers 409 and grants nothing."""
    user = services.account_register(
        **payload.dict(), ip_address=client_ip(request), language=get_language()
    )
    return Status(201, user)


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
