"""The back-office speaks Spanish in Spanish mode (issue 12): admin, review queue, outbox."""

import pytest
from django.urls import reverse

from tests.factories import make_user

pytestmark = pytest.mark.django_db
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}


@pytest.fixture
def operator(client):
    user = make_user(staff=True, is_superuser=True)
    client.force_login(user)
    return user


def test_admin_index_names_the_applications_in_spanish(client, operator):
    page = client.get(reverse("admin:index"), **ES).content.decode()

    for spanish in (
        "Pedidos",
        "Pagos",
        "Cuentas",
        "Libro del saldo",
        "Administración de Kernodeck",
    ):
        assert spanish in page
    # The application captions; the model names inside them are not translated yet.
    for english in ("Balance ledger", "Kernodeck back-office", ">Catalog<"):
        assert english not in page


def test_review_queue_and_outbox_in_spanish(client, operator):
    queue = client.get(reverse("backoffice:review_queue"), **ES).content.decode()
    outbox = client.get(reverse("notifications:outbox"), **ES).content.decode()

    assert "Vigilancia de las cadenas" in queue and "Nada que decidir." in queue
    assert "Chain watchers" not in queue and "Nothing to decide." not in queue
    assert "Bandeja de salida de correo" in outbox and "No hay correos." in outbox
    assert "E-mail outbox" not in outbox
