"""Issue 23, item 5, in a browser, in Spanish and English, on a phone (390 px) and a desktop
(1280 px): the lost-password way back. From the sign-in page, "I can't sign in"; the form
answers an existing address exactly as an unknown one; staff holding
support.set_account_password find the request as its own kind in the inbox and send the
link; the link from the e-mail opens a page where the person chooses a new password; the
new password signs in, the old one no longer does."""

import os
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission

from kernodeck.accounts.models import User
from kernodeck.notifications.models import OutboxMessage
from kernodeck.support.models import AccessRequest
from tests.browser.test_order_journey import sign_in
from tests.factories import PASSWORD, make_user
from tests.support.helpers import make_agent

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("KERNODECK_SCREENSHOTS", "")  # a folder, to look at the pages

NEW_PASSWORD = "a brand new sentence for the account 7"
LINK = re.compile(r"(/account/new-password/[^\s/]+/[^\s/]+/)")

WORDS = {
    "en-GB": {
        "cant": "I can't sign in",
        "send": "Send to support",
        "sent": "Request sent",
        "received": "Your request is sent.",
        "end_all": "End all access and e-mail a new-password link",
        "ended": "The old password no longer works",
        "choose": "Choose a new password",
        "set": "Set the new password",
        "is_set": "Your new password is set. Sign in with it.",
        "sign_in": "Sign in",
        "filter": "Filter",
        "wrong": "The email or the password is not correct.",
    },
    "es-ES": {
        "cant": "No puedo iniciar sesión",
        "send": "Enviar al soporte",
        "sent": "Solicitud enviada",
        "received": "Tu solicitud se ha enviado.",
        "end_all": "Cerrar todo acceso y enviar un enlace de nueva contraseña",
        "ended": "La contraseña anterior ya no funciona",
        "choose": "Elige una nueva contraseña",
        "set": "Establecer la nueva contraseña",
        "is_set": "Tu nueva contraseña está establecida. Inicia sesión con ella.",
        "sign_in": "Iniciar sesión",
        "filter": "Filtrar",
        "wrong": "El correo electrónico o la contraseña no son correctos.",
    },
}


def shoot(page, name):
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def fits(page, width):
    """Nothing sticks out sideways at this width."""
    return page.evaluate("document.documentElement.scrollWidth") <= width


def password_agent(email):
    agent = make_agent(email=email)
    agent.user_permissions.add(Permission.objects.get(codename="set_account_password"))
    return agent


def ask_for_help(page, base, words, email, width):
    """Signed out: from the sign-in page to the "I can't sign in" form and its answer."""
    page.goto(f"{base}/account/sign-in/")
    page.locator("#cant-sign-in").get_by_role("link", name=words["cant"]).click()
    page.wait_for_url("**/support/cant-sign-in/")
    page.get_by_role("heading", name=words["cant"]).wait_for()
    assert fits(page, width)
    page.fill("input[name=email]", email)
    page.fill("input[name=name]", "Ada Lovelace")
    page.fill("textarea[name=references]", "KD-7Q2M-4XKD, paid in BTC in March")
    page.fill("textarea[name=body]", "My password no longer works.")
    page.get_by_role("button", name=words["send"]).click()
    page.wait_for_url("**/support/cant-sign-in/sent/")
    page.get_by_role("heading", name=words["sent"]).wait_for()
    assert fits(page, width)
    return page.locator("main").inner_text()


def sign_in_fails(page, base, words, email, password):
    page.goto(f"{base}/account/sign-in/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.click("main form button[type=submit]")
    page.locator(".error-summary", has_text=words["wrong"]).wait_for()
    return page.url.endswith("/account/sign-in/")


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("locale", ["es-ES", "en-GB"])
def test_lost_password_from_the_sign_in_page_to_a_new_password(
    live_server, new_context, settings, locale, width
):
    settings.KERNODECK_SITE_URL = live_server.url  # the e-mailed link points here
    words = WORDS[locale]
    short = locale[:2]
    base = live_server.url
    viewport = {"width": width, "height": 900}
    owner = make_user(email="ada@example.org", preferred_language=short)
    password_agent("agent@example.org")

    # Signed out: an existing address and an unknown one get the very same answer.
    visitor = new_context(locale=locale, viewport=viewport)
    page = visitor.new_page()
    known = ask_for_help(page, base, words, "ada@example.org", width)
    shoot(page, f"cant-sign-in-sent-{short}-{width}")
    stranger = new_context(locale=locale, viewport=viewport).new_page()
    unknown = ask_for_help(stranger, base, words, "nobody@example.org", width)
    assert known == unknown
    assert words["received"] in known
    assert AccessRequest.objects.count() == 2

    # Staff: the request is its own kind in the inbox; they open it and send the link.
    staff = new_context(locale=locale, viewport=viewport).new_page()
    sign_in(staff, base, "agent@example.org")
    staff.goto(f"{base}/backoffice/support/")
    staff.select_option("select#kind", "access")
    staff.get_by_role("button", name=words["filter"]).click()
    staff.wait_for_url("**kind=access**")
    requests = staff.locator("#access-requests")
    requests.wait_for()
    assert "nobody@example.org" in requests.inner_text()
    assert fits(staff, width)
    shoot(staff, f"inbox-access-{short}-{width}")
    requests.get_by_role("link", name="ada@example.org").click()
    staff.get_by_role("heading", name=words["cant"]).wait_for()
    assert owner.email in staff.locator("#account").inner_text()
    staff.get_by_role("button", name=words["end_all"]).click()
    staff.get_by_text(words["ended"]).wait_for()
    assert fits(staff, width)
    shoot(staff, f"access-case-{short}-{width}")

    # The e-mail to the account's own address holds the single-use link.
    mail = OutboxMessage.objects.get(event="access_password_link")
    assert mail.to_email == owner.email
    assert f"{base}/account/new-password/" in mail.body_text
    link = LINK.search(mail.body_text).group(1)

    # The old password fails already.
    page = new_context(locale=locale, viewport=viewport).new_page()
    assert sign_in_fails(page, base, words, owner.email, PASSWORD)

    # The link's page: choose a new password, then sign in with it.
    page.goto(base + link)
    page.get_by_role("heading", name=words["choose"]).wait_for()
    assert owner.email in page.locator("main").inner_text()
    assert fits(page, width)
    shoot(page, f"new-password-{short}-{width}")
    page.fill("input[name=new_password]", NEW_PASSWORD)
    page.get_by_role("button", name=words["set"]).click()
    page.wait_for_url("**/account/sign-in/")
    page.get_by_text(words["is_set"]).wait_for()
    assert fits(page, width)
    page.fill("input[name=email]", owner.email)
    page.fill("input[name=password]", NEW_PASSWORD)
    page.get_by_role("main").get_by_role("button", name=words["sign_in"]).click()
    page.wait_for_url("**/account/")
    assert User.objects.get(pk=owner.pk).check_password(NEW_PASSWORD)

    # The link worked once; the old password still fails.
    page.goto(base + link)
    page.get_by_role("heading", name=words["choose"]).wait_for()
    assert page.locator("input[name=new_password]").count() == 0
    other = new_context(locale=locale, viewport=viewport).new_page()
    assert sign_in_fails(other, base, words, owner.email, PASSWORD)
