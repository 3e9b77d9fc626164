import pytest

from kernodeck.accounts.models import ApiToken, User
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db

REGISTER = {
    "first_name": "Grace",
    "last_name": "Hopper",
    "email": "grace@example.org",
    "password": "compiler nanoseconds cobol 1952",
}


def post(client, path, body, **extra):
    return client.post(f"/api/v1{path}", body, content_type="application/json", **extra)


def test_register_answers_202_and_the_new_account_gets_a_token(client):
    response = post(client, "/auth/register", REGISTER)

    assert response.status_code == 202
    assert "If this address is new" in response.json()["detail"]
    assert User.objects.get().email == "grace@example.org"
    token = post(
        client, "/auth/token", {"email": REGISTER["email"], "password": REGISTER["password"]}
    )
    assert token.status_code == 200


def test_register_with_a_taken_email_answers_exactly_like_a_new_one(client):
    owner = make_user(email="grace@example.org")

    taken = post(client, "/auth/register", {**REGISTER, "email": "GRACE@example.org"})
    new = post(client, "/auth/register", {**REGISTER, "email": "hopper@example.org"})

    assert taken.status_code == new.status_code == 202
    assert taken.json() == new.json()
    assert taken.content == new.content
    owner.refresh_from_db()
    assert owner.check_password(PASSWORD)
    assert not ApiToken.objects.exists()


def test_register_with_a_short_password_answers_422_naming_the_rule(client):
    response = post(client, "/auth/register", {**REGISTER, "password": "x" * 14})

    assert response.status_code == 422
    assert response.json() == {
        "detail": "password: Your password must be 15 to 128 characters long."
    }
    assert not User.objects.exists()


def test_missing_field_answers_422_naming_the_field(client):
    body = {k: v for k, v in REGISTER.items() if k != "email"}

    response = post(client, "/auth/register", body)

    assert response.status_code == 422
    assert response.json()["detail"].startswith("email: ")


def test_malformed_json_answers_in_the_error_shape(client):
    response = client.post("/api/v1/auth/register", "{not json", content_type="application/json")

    assert response.status_code in {400, 422}
    assert set(response.json()) == {"detail"}


def test_token_exchange_returns_a_working_token(client):
    user = make_user(email="ada@example.org")

    response = post(client, "/auth/token", {"email": "ada@example.org", "password": PASSWORD})

    assert response.status_code == 200
    raw = response.json()["token"]
    assert raw.startswith("kd_")
    assert ApiToken.objects.get(user=user).prefix == raw[:10]


def test_token_exchange_with_a_wrong_password_answers_401_and_creates_nothing(client):
    make_user(email="ada@example.org")

    response = post(client, "/auth/token", {"email": "ada@example.org", "password": "nope nope"})

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json() == {"detail": "The email or the password is not correct."}
    assert not ApiToken.objects.exists()


def test_token_exchange_for_an_unknown_email_answers_the_same_401(client):
    response = post(client, "/auth/token", {"email": "nobody@example.org", "password": "x" * 20})

    assert response.status_code == 401
    assert response.json() == {"detail": "The email or the password is not correct."}


def test_token_exchange_is_throttled_like_the_web(client, settings):
    settings.KERNODECK_THROTTLE_SIGNIN_ACCOUNT = (2, 600)
    make_user(email="ada@example.org")
    for _ in range(2):
        post(client, "/auth/token", {"email": "ada@example.org", "password": "wrong wrong"})

    response = post(client, "/auth/token", {"email": "ada@example.org", "password": PASSWORD})

    assert response.status_code == 429
    assert response["Retry-After"]
    assert "Too many failed sign-ins for this account." in response.json()["detail"]
    assert not ApiToken.objects.exists()


def test_unknown_api_path_answers_json_404(client):
    response = client.get("/api/v1/no-such-thing")

    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


def test_openapi_document_and_docs_are_served(client):
    spec = client.get("/api/v1/openapi.json")

    assert spec.status_code == 200
    assert "/api/v1/auth/register" in spec.json()["paths"]
    assert client.get("/api/v1/docs").status_code == 200


def test_me_needs_a_bearer_token(client):
    response = client.get("/api/v1/auth/me")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert "Authentication required" in response.json()["detail"]


def test_me_answers_with_a_valid_token_and_401_once_revoked(client):
    from kernodeck.accounts import services

    user = make_user(email="ada@example.org")
    token, raw = services.api_token_create(user=user, name="cli")

    ok = client.get("/api/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    services.api_token_revoke(user=user, token_id=token.pk)
    refused = client.get("/api/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {raw}")

    assert ok.status_code == 200
    assert ok.json()["email"] == "ada@example.org"
    assert refused.status_code == 401


def test_garbage_token_answers_401(client):
    response = client.get("/api/v1/auth/me", HTTP_AUTHORIZATION="Bearer kd_nonsense")

    assert response.status_code == 401
