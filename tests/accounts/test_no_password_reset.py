"""R7: there is no automatic password reset by email anywhere: no URL, no link, no form.

Somebody who lost a password asks support with the signed-out "I can't sign in" request;
only staff, after checking who asked, can e-mail a single-use new-password link
(tests/support/test_access_password.py)."""

import pytest
from django.urls import NoReverseMatch, reverse

pytestmark = pytest.mark.django_db

DJANGO_RESET_NAMES = [
    ("password_reset", []),
    ("password_reset_done", []),
    ("password_reset_confirm", ["MQ", "set-password"]),
    ("password_reset_complete", []),
    ("admin_password_reset", []),
]
DJANGO_RESET_PATHS = [
    "/password_reset/",
    "/password_reset/done/",
    "/reset/MQ/set-password/",
    "/reset/done/",
    "/accounts/password_reset/",
    "/account/password_reset/",
    "/account/password-reset/",
    "/backoffice/password_reset/",
    "/admin/password_reset/",
]


@pytest.mark.parametrize(("name", "args"), DJANGO_RESET_NAMES)
def test_no_reset_view_is_routed(name, args):
    with pytest.raises(NoReverseMatch):
        reverse(name, args=args)


@pytest.mark.parametrize("path", DJANGO_RESET_PATHS)
def test_every_django_reset_url_answers_404(client, path):
    assert client.get(path).status_code == 404
    assert client.post(path, {"email": "ada@example.org"}).status_code == 404


def test_sign_in_page_explains_recovery_through_support_and_links_no_reset(client):
    page = client.get(reverse("accounts:signin")).content.decode()

    assert "There is no automatic password reset by email" in page
    assert "Contact support" in page
    assert reverse("support:access_request") in page
    assert "password_reset" not in page
    assert "reset/" not in page
