"""The address counter hands out each index once, and addresses follow the configured key."""

import pytest
from bip_utils import Bip44Changes, Bip84, Bip84Coins

from kernodeck.payments import locks, services
from kernodeck.payments.models import AddressCounter
from tests.factories import make_offer, make_order

pytestmark = pytest.mark.django_db


def test_the_counter_is_created_on_first_use_and_moves_on_by_one():
    taken = [
        locks.counter_take_index(chain="bitcoin", wallet_fingerprint="aaaa0001") for _ in "abc"
    ]
    other = locks.counter_take_index(chain="bitcoin", wallet_fingerprint="bbbb0002")

    assert taken == [0, 1, 2]
    assert other == 0
    counters = AddressCounter.objects.order_by("wallet_fingerprint")
    assert [(c.wallet_fingerprint, c.next_index) for c in counters] == [
        ("aaaa0001", 3),
        ("bbbb0002", 1),
    ]


def _other_account():
    """A BIP84 account of another seed than the demo wallet's (with its private key, to
    derive the expected address without the server's code)."""
    return Bip84.FromSeed(bytes(range(64)), Bip84Coins.BITCOIN).Purpose().Coin().Account(0)


def test_a_changed_key_gives_addresses_of_the_new_key(configured, fresh_rates):
    offer = make_offer(units_total=10)
    first, second = make_order(offer=offer), make_order(offer=offer)
    before = services.payment_intent_create_for_order(
        order=first, method_code="btc-bitcoin", actor=first.owner
    )
    new_key = _other_account().PublicKey().ToExtended()
    configured.KERNODECK_XPUBS = {**configured.KERNODECK_XPUBS, "bitcoin": new_key}

    after = services.payment_intent_create_for_order(
        order=second, method_code="btc-bitcoin", actor=second.owner
    )

    assert after.wallet_fingerprint != before.wallet_fingerprint
    assert after.derivation_index == 0  # the new wallet's own sequence
    assert after.address != before.address
    assert after.address == (
        _other_account().Change(Bip44Changes.CHAIN_EXT).AddressIndex(0).PublicKey().ToAddress()
    )
