"""`core.links.link_maker` gives the URL `reverse()` gives, for each kind of key."""

import uuid

import pytest
from django.urls import NoReverseMatch, reverse

from kernodeck.core.links import link_maker


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("desk:rental", "KD-ABC123"),  # str
        ("backoffice_nodes:detail", "node-00001"),  # slug
        ("support_staff:ticket", uuid.uuid4()),  # uuid
        ("notifications:outbox_retry", 42),  # int
    ],
)
def test_a_link_made_once_is_the_reversed_one(name, key):
    assert link_maker(name)(key) == reverse(name, args=[key])


def test_a_url_without_one_key_is_refused():
    with pytest.raises(NoReverseMatch):
        link_maker("desk:rentals")
