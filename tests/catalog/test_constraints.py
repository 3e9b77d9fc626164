"""Every constraint of the catalog that a write can hit: refused with its reason, never an
IntegrityError (a 500).

Operators write offers and prices in the back-office (the offer form with its price rows);
the demo seed writes them through `services.offer_create_if_missing`. Nothing else does.

| constraint                        | kind     | write path, and what guards it             |
|-----------------------------------|----------|--------------------------------------------|
| Offer.slug (unique)               | race     | back-office: the form checks it; two saves |
|                                   |          |   at once: the loser is told why (admin's  |
|                                   |          |   changeform_view), nothing saved          |
|                                   | internal | offer_create_if_missing: a savepoint, a    |
|                                   |          |   concurrent or repeated seed is a no-op   |
| catalog_offer_gpus_per_unit_range | value    | the offer form validates the constraints   |
| catalog_offer_memory_positive     | value    |   (its fields are all in the form): a form |
| catalog_offer_vendor_backend      | value    |   error before the database                |
| catalog_price_offer_days (unique) | value    | the price rows: the formset refuses two    |
|                                   |          |   rows for one duration                    |
| catalog_price_days_allowed        | value    | the price row's choices                    |
| catalog_price_positive            | value    | the price row validates the constraint     |
"""

from decimal import Decimal

import pytest
from django.test import Client

from kernodeck.catalog import services
from kernodeck.catalog.models import Offer, OfferPrice
from tests.constraint_races import needs_postgres, race
from tests.factories import make_offer, make_user

pytestmark = pytest.mark.django_db

ADD = "/backoffice/catalog/offer/add/"


def _operator_client():
    client = Client(raise_request_exception=False)
    client.force_login(make_user(staff=True, is_superuser=True))
    return client


def _offer_form(slug="h200", prices=((3, "100.00"), (7, "210.00")), **changes):
    data = {
        "slug": slug,
        "gpu_model": "H200 141 GB",
        "vendor": "nvidia",
        "backend": "cuda",
        "memory_gib": "141",
        "gpus_per_unit": "1",
        "preparations": ["pytorch"],
        "description": "",
        "is_active": "on",
        "sort_order": "0",
        "prices-TOTAL_FORMS": str(len(prices)),
        "prices-INITIAL_FORMS": "0",
        "prices-MIN_NUM_FORMS": "1",
        "prices-MAX_NUM_FORMS": "1000",
    }
    for n, (days, price) in enumerate(prices):
        data[f"prices-{n}-days"] = str(days)
        data[f"prices-{n}-unit_price_usd"] = price
    data.update(changes)
    return data


def test_the_offer_form_saves_a_valid_offer():
    response = _operator_client().post(ADD, _offer_form())
    assert response.status_code == 302
    offer = Offer.objects.get(slug="h200")
    assert sorted(offer.prices.values_list("days", flat=True)) == [3, 7]


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (_offer_form(gpus_per_unit="9"), "form"),
        (_offer_form(gpus_per_unit="0"), "form"),
        (_offer_form(memory_gib="0"), "form"),
        (_offer_form(vendor="amd", backend="cuda"), "form"),
        (_offer_form(prices=((3, "100.00"), (3, "90.00"))), "prices"),
        (_offer_form(prices=((5, "100.00"),)), "prices"),
        (_offer_form(prices=((3, "0.00"),)), "prices"),
        (_offer_form(prices=((3, "-1.00"),)), "prices"),
    ],
    ids=["gpus-9", "gpus-0", "memory-0", "amd-cuda", "days-twice", "days-5", "free", "negative"],
)
def test_an_offer_the_constraints_refuse_is_a_form_error(data, where):
    response = _operator_client().post(ADD, data)

    assert response.status_code == 200  # the form again, with the reason; not a 500
    if where == "form":
        assert response.context["adminform"].form.errors
    else:
        formset = response.context["inline_admin_formsets"][0].formset
        assert formset.errors != [{}] * len(formset.forms) or formset.non_form_errors()
    assert not Offer.objects.exists()
    assert not OfferPrice.objects.exists()


def test_a_slug_already_taken_is_a_form_error():
    make_offer(slug="h200", units_total=0)
    response = _operator_client().post(ADD, _offer_form())
    assert response.status_code == 200
    assert "slug" in response.context["adminform"].form.errors
    assert Offer.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_operators_adding_one_slug_at_once_save_one_and_tell_the_other():
    needs_postgres()
    clients = [_operator_client() for _ in range(3)]
    prices = [(3, "100.00")], [(3, "200.00")], [(3, "300.00")]

    results = race(lambda n: clients[n].post(ADD, _offer_form(prices=prices[n])), 3)

    assert all(not isinstance(r, Exception) for r in results), results
    codes = [r.status_code for r in results]
    assert 500 not in codes
    assert Offer.objects.filter(slug="h200").count() == 1
    assert OfferPrice.objects.count() == 1
    told = [r for r in results if r.status_code == 302 and r.url == ADD]
    saved = [r for r in results if r.status_code == 302 and r.url != ADD]
    assert len(saved) == 1
    # The others were either refused by the form (it saw the committed offer) or told.
    assert len(told) + codes.count(200) == 2
    for response in told:
        shown = [str(m) for m in response.wsgi_request._messages]
        assert any("saved at the same moment" in m for m in shown)


def test_seeding_an_offer_twice_creates_it_once():
    fields = {
        "slug": "demo-h100",
        "gpu_model": "H100",
        "vendor": "nvidia",
        "backend": "cuda",
        "memory_gib": 80,
        "prices": {3: Decimal("10.00")},
    }
    assert services.offer_create_if_missing(**fields) is not None
    assert services.offer_create_if_missing(**fields) is None
    assert Offer.objects.filter(slug="demo-h100").count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_seeds_create_one_offer():
    needs_postgres()

    def seed(_n):
        return services.offer_create_if_missing(
            slug="demo-h100",
            gpu_model="H100",
            vendor="nvidia",
            backend="cuda",
            memory_gib=80,
            prices={3: Decimal("10.00"), 7: Decimal("20.00")},
        )

    results = race(seed, 4)

    assert not [r for r in results if isinstance(r, Exception)], results
    assert len([r for r in results if isinstance(r, Offer)]) == 1
    assert Offer.objects.count() == 1
    assert OfferPrice.objects.count() == 2
