"""The rentals desk: starting the preparation is the primary action (not styled as a
destructive one, which ending still is), and an ended rental says it ended instead of
waiting for free slots."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from kernodeck.provisioning import services
from tests.factories import make_offer, make_operator, make_settled_order, make_ssh_key

pytestmark = pytest.mark.django_db


def _desk(language) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(make_operator())
    return client


def _submit(html: str) -> str:
    main = html.split("<main", 1)[1]
    return re.search(r'<button type="submit"[^>]*>[^<]*</button>', main).group(0)


@pytest.mark.parametrize(
    ("language", "prepare", "end"),
    [
        ("en", "Start preparing", "End now (frees the slots, erases the secrets)"),
        (
            "es",
            "Empezar la preparación",
            "Terminar ahora (libera las ranuras, borra los secretos)",
        ),
    ],
)
def test_start_preparing_is_primary_and_ending_stays_destructive(language, prepare, end):
    queued = make_settled_order(offer=make_offer(units_total=2))
    client = _desk(language)

    page = client.get(reverse("desk:action", args=[queued.reference, "prepare"]))
    button = _submit(page.content.decode())
    assert button == f'<button type="submit">{prepare}</button>'

    page = client.get(reverse("desk:action", args=[queued.reference, "end"]))
    assert _submit(page.content.decode()) == f'<button type="submit" class="danger">{end}</button>'


@pytest.mark.parametrize(
    ("language", "ended", "waiting"),
    [
        (
            "en",
            "none: the rental ended and its slots are free again",
            "waiting for free slots",
        ),
        (
            "es",
            "ninguna: el alquiler terminó y sus ranuras vuelven a estar libres",
            "en espera de ranuras libres",
        ),
    ],
)
def test_an_ended_rental_says_it_ended_not_that_it_waits_for_slots(language, ended, waiting):
    order = make_settled_order(offer=make_offer(units_total=2))
    make_ssh_key(order.owner)
    operator = make_operator()
    services.rental_allocate(order=order)
    services.rental_prepare(order=order, actor=operator)
    services.rental_deliver(
        order=order, host="gpu-01.example.org", port=22, user="kd-r", actor=operator
    )
    services.rental_end(order=order, reason="customer asked", actor=operator)

    html = _desk(language).get(reverse("desk:rental", args=[order.reference])).content.decode()

    assert ended in html
    assert waiting not in html
