"""The owner's banner on the order file while a reminder threshold has passed."""

from datetime import timedelta

import pytest

from kernodeck.core import clock
from kernodeck.notifications import selectors
from tests.factories import make_user
from tests.notifications.test_reminders import START, active_rental

pytestmark = pytest.mark.django_db

H = timedelta(hours=1)


def test_no_banner_before_the_first_threshold(client):
    order = active_rental(days=7)
    clock.freeze(order.ends_at - 73 * H)
    client.force_login(order.owner)

    response = client.get(f"/orders/{order.reference}/")

    assert response.status_code == 200
    assert response.context["reminder_banner"] is None
    assert "reminder-banner" not in response.content.decode()


@pytest.mark.parametrize(
    ("left", "language", "title"),
    [
        (timedelta(hours=71, minutes=30), "en", "Your rental ends in 71 hours and 30 minutes"),
        (timedelta(minutes=109), "en", "Your rental ends in 1 hour and 49 minutes"),
        (timedelta(minutes=3), "en", "Your rental ends in 3 minutes"),
        (timedelta(hours=23), "es", "Tu alquiler vence en 23 horas<"),
        (timedelta(minutes=109), "es", "Tu alquiler vence en 1 hora y 49 minutos"),
        (timedelta(minutes=1, seconds=59), "es", "Tu alquiler vence en 1 minuto<"),
        (timedelta(seconds=40), "es", "Tu alquiler vence en menos de un minuto"),
    ],
)
def test_the_owner_sees_the_export_checklist_once_a_threshold_passed(
    client, left, language, title
):
    order = active_rental(days=7)
    clock.freeze(order.ends_at - left)
    client.force_login(order.owner)

    html = client.get(f"/orders/{order.reference}/", HTTP_ACCEPT_LANGUAGE=language).content
    html = html.decode()

    assert 'class="notice reminder-banner"' in html
    assert title in html
    checklist = {
        "en": ["your results", "your checkpoints", "your parameters", "verify the copy"],
        "es": ["tus resultados", "tus checkpoints", "tus parámetros", "verificar la copia"],
    }[language]
    for item in checklist:
        assert item in html


def test_another_account_gets_a_404_and_the_selector_shows_them_nothing(client):
    order = active_rental(days=7)
    clock.freeze(order.ends_at - 2 * H)
    stranger = make_user()
    staff = make_user(staff=True)
    client.force_login(stranger)

    assert client.get(f"/orders/{order.reference}/").status_code == 404
    assert selectors.rental_reminder_banner(order=order, viewer=stranger) is None
    assert selectors.rental_reminder_banner(order=order, viewer=staff) is None
    assert selectors.rental_reminder_banner(order=order, viewer=order.owner) == {
        "threshold_hours": 2,
        "hours_left": 2,
        "minutes_left": 120,
        "ends_at": order.ends_at,
    }


def test_the_banner_goes_away_when_the_rental_ends_or_is_extended():
    order = active_rental(days=7)
    clock.freeze(order.ends_at - 2 * H)
    assert selectors.rental_reminder_banner(order=order, viewer=order.owner) is not None

    order.ends_at = order.ends_at + timedelta(days=7)  # an extension
    assert selectors.rental_reminder_banner(order=order, viewer=order.owner) is None

    clock.freeze(order.ends_at)
    assert selectors.rental_reminder_banner(order=order, viewer=order.owner) is None
    assert order.starts_at == START
