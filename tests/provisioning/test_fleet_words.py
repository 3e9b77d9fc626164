"""The fleet's words and links, made once per page in the view (issue 27), read as the
template's own messages did: in English and in Spanish, with each node's and rental's link."""

import pytest
from django.urls import reverse

from tests.budgets.operations_data import build

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("language", "words", "state", "labels"),
    [
        ("en", "2 GPUs, 1 busy", "Available", ['data-label="Runs"', ">Change state</a>"]),
        (
            "es",
            "2 GPU, 1 ocupadas",
            "Disponible",
            ['data-label="Ejecuta"', ">Cambiar el estado</a>"],
        ),
    ],
)
def test_the_fleet_reads_each_node_in_the_visitors_language(
    client, language, words, state, labels
):
    data = build(4)
    client.force_login(data.operator)

    page = client.get("/backoffice/fleet/", HTTP_ACCEPT_LANGUAGE=language)

    assert page.status_code == 200
    html = page.content.decode()
    assert words in html
    assert state in html
    for label in labels:  # the cards are made in the view now: its words are the template's
        assert label in html, label
    assert reverse("desk:node_state", args=[data.node.name]) in html
    assert reverse("backoffice_nodes:detail", args=[data.node.name]) in html
    rental = data.node.slots.get(index=0).allocations.get(released_at__isnull=True).order
    assert reverse("desk:rental", args=[rental.reference]) in html
