"""The back-office speaks Spanish in Spanish mode (issue 12): admin, review queue, outbox,
the provisioning desk and fleet, the ssh nodes and the support inbox."""

import re

import pytest
from django.urls import reverse

from kernodeck.support.models import Ticket
from tests.factories import make_offer, make_settled_order, make_ssh_node, make_user
from tests.support.helpers import problem_ticket

pytestmark = pytest.mark.django_db
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture
def operator(client):
    user = make_user(staff=True, is_superuser=True)
    client.force_login(user)
    return user


@pytest.fixture
def busy_backoffice():
    """A queued rental on the desk, an ssh node, and a ticket in the inbox."""
    offer = make_offer(units_total=0)
    make_ssh_node(name="es-node-1", offer=offer, gpu_count=2, host="10.9.0.7")
    customer = make_user()
    order = make_settled_order(owner=customer, offer=offer)
    problem_ticket(owner=customer, order=order, subject="Se cae")
    return order


def _text(response) -> str:
    """The visible words of a page: no tags, scripts or attribute values."""
    html = response.content.decode()
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_admin_index_names_the_applications_and_models_in_spanish(client, operator):
    page = client.get(reverse("admin:index"), **ES).content.decode()

    for spanish in (
        "Pedidos",
        "Pagos",
        "Cuentas",
        "Libro del saldo",
        "Administración de Kernodeck",
        "Movimientos del saldo",
        "Recargas",
        "Nodos",
        "Entregas",
        "Eventos de auditoría",
        "Métodos de pago",
        "Tipos de cambio",
        "Ofertas",
    ):
        assert spanish in page
    for english in (
        "Balance ledger",
        "Kernodeck back-office",
        ">Catalog<",
        "Ledger entries",
        "Top ups",
        "Audit events",
        "Payment intents",
        "Deliveries",
    ):
        assert english not in page


def test_admin_field_labels_and_help_in_spanish(client, operator, busy_backoffice):
    orders = _text(client.get(reverse("admin:orders_order_changelist"), **ES))
    node = client.get(reverse("admin:provisioning_node_changelist"), **ES).content.decode()

    for spanish in ("Referencia", "Cliente", "Modelo de GPU", "Pago", "Alquiler"):
        assert spanish in orders
    assert "Gpu model" not in orders and "Payment state" not in orders
    assert "Nodos" in node and "Estado" in node


def test_review_queue_and_outbox_in_spanish(client, operator):
    queue = client.get(reverse("backoffice:review_queue"), **ES).content.decode()
    outbox = client.get(reverse("notifications:outbox"), **ES).content.decode()

    assert "Vigilancia de las cadenas" in queue and "Nada que decidir." in queue
    assert "Chain watchers" not in queue and "Nothing to decide." not in queue
    assert "Bandeja de salida de correo" in outbox and "No hay correos." in outbox
    assert "E-mail outbox" not in outbox


def test_provisioning_desk_rental_and_fleet_in_spanish(client, operator, busy_backoffice):
    order = busy_backoffice
    desk = _text(client.get(reverse("desk:rentals"), **ES))
    rental = _text(client.get(reverse("desk:rental", args=[order.reference]), **ES))
    fleet = _text(client.get(reverse("desk:fleet"), **ES))
    action = _text(client.get(reverse("desk:action", args=[order.reference, "refund"]), **ES))

    assert "Mesa de preparación" in desk and "Claves SSH del cliente" in desk
    assert order.reference in desk
    for english in ("Provisioning desk", "Customer SSH keys", "Waiting", "Filter", "no key"):
        assert english not in desk
    assert "Acciones" in rental and "Máquina" in rental and "Empezar la preparación" in rental
    for english in ("Actions", "Machine", "Start preparing", "Deliveries", "Timeline"):
        assert english not in rental
    assert "Flota" in fleet and "Añadir un nodo" in fleet and "Cambiar el estado" in fleet
    for english in ("Fleet", "Add a node", "Change state", "busy", "free"):
        assert english not in fleet
    assert "Reembolsar al saldo (termina el alquiler)" in action and "Motivo" in action
    assert "Confirmo esta acción" in action and "I confirm" not in action


def test_ssh_nodes_pages_in_spanish(client, operator, busy_backoffice):
    nodes = _text(client.get(reverse("backoffice_nodes:list"), **ES))
    node = _text(client.get(reverse("backoffice_nodes:detail", args=["es-node-1"]), **ES))

    assert "Nodos SSH" in nodes and "Clave del host" in nodes and "todavía no" in nodes
    for english in ("SSH nodes", "Host key", "Checked", "not yet", "Nodes the"):
        assert english not in nodes
    assert "Inspeccionar ahora" in node and "Pasos y eventos" in node
    for english in ("Inspect now", "Steps and events", "How the driver", "Last inspection"):
        assert english not in node


def test_support_inbox_and_ticket_in_spanish(client, operator, busy_backoffice):
    inbox = _text(client.get(reverse("support_staff:inbox"), **ES))

    ticket = Ticket.objects.get(subject="Se cae")
    case = _text(client.get(reverse("support_staff:ticket", args=[ticket.pk]), **ES))

    assert "Bandeja de soporte" in inbox and "En espera desde" in inbox and "Sin cerrar" in inbox
    for english in ("Support inbox", "Waiting since", "Not closed", "Subject", "Messages"):
        assert english not in inbox
    assert "Conversación" in case and "Enviar la respuesta" in case
    for english in ("Thread", "Send reply", "Canned answers", "Payments", "opened"):
        assert english not in case


def test_the_pages_stay_english_in_english(client, operator, busy_backoffice):
    desk = _text(client.get(reverse("desk:rentals"), **EN))
    inbox = _text(client.get(reverse("support_staff:inbox"), **EN))

    assert "Provisioning desk" in desk and "Customer SSH keys" in desk
    assert "Support inbox" in inbox and "Waiting since" in inbox
