"""A customer near the end of a rental sees the export banner; an operator reads the outbox."""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from django.utils.text import Truncator

from kernodeck.core import clock
from kernodeck.notifications import reminders
from kernodeck.notifications.models import OutboxMessage
from tests.factories import make_user
from tests.notifications.test_reminders import active_rental

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("KD_SCREENSHOTS", "")


def shoot(page, name):
    """Save a screenshot at 1280 and 390 px wide when KD_SCREENSHOTS names a folder."""
    if not SHOTS:
        return
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(Path(SHOTS) / f"{name}-{width}.png"), full_page=True)


def sign_in(page, base, email):
    page.goto(base + "/account/sign-in/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", "correct horse battery staple 42")
    page.click("main form button[type=submit]")
    # Customers land on their account, operators on the back-office.
    page.wait_for_url(lambda url: url.endswith(("/account/", "/backoffice/")))


def test_the_owner_sees_the_export_checklist_and_the_operator_the_reminder(
    live_server, new_context
):
    order = active_rental(days=7, owner=make_user(email="ada@example.org"))
    clock.freeze(order.ends_at - timedelta(hours=23, minutes=30))
    reminders.rental_reminders_send()
    operator = make_user(email="ops@example.org", staff=True)
    operator.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="notifications")
    )

    page = new_context(locale="es-ES").new_page()
    sign_in(page, live_server.url, "ada@example.org")
    page.goto(f"{live_server.url}/orders/{order.reference}/")
    banner = page.locator(".reminder-banner")
    banner.get_by_role("heading", name="Tu alquiler vence en 23 horas y 30 minutos").wait_for()
    for item in ("tus resultados", "tus checkpoints", "tus parámetros", "verificar la copia"):
        assert item in banner.inner_text()
    shoot(page, "reminder-banner")

    page = new_context(locale="en-GB").new_page()
    sign_in(page, live_server.url, "ops@example.org")
    page.goto(f"{live_server.url}/backoffice/outbox/?status=sent")
    page.get_by_role("heading", name="E-mail outbox").wait_for()
    row = OutboxMessage.objects.get(event="rental_reminder")
    assert Truncator(row.subject).chars(70) in page.content()  # the list shortens subjects
    shoot(page, "outbox")
