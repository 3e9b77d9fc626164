"""The catalog cache: the catalog page, the offers list and quotes read offers, prices and
units free from it; every change of offers, prices, fleet or holds shows at once, a lapsed
hold within KERNODECK_CATALOG_CACHE_SECONDS (catalog/caching.py)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from kernodeck.catalog import caching
from kernodeck.catalog.models import OfferPrice
from kernodeck.core import clock
from kernodeck.orders import services as order_services
from kernodeck.provisioning import services as provisioning_services
from kernodeck.provisioning.models import Node, NodeState
from kernodeck.settlement import orders as settlement_orders
from tests.factories import api_post, make_offer, make_order, make_settled_order, make_user

pytestmark = pytest.mark.django_db

EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
ES = {"HTTP_ACCEPT_LANGUAGE": "es"}
T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def free_on_page(client, **headers) -> str:
    page = client.get(reverse("catalog:list"), **(headers or EN)).content.decode()
    start = page.index("<dt>Free now</dt><dd>") + len("<dt>Free now</dt><dd>")
    return page[start : page.index("</dd>", start)]


def free_in_api(client) -> int:
    return client.get("/api/v1/offers").json()[0]["units_available"]


def quote_units(client, offer, units):
    body = {"offer": offer.slug, "days": 7, "units": units, "preparation": "pytorch"}
    return api_post(client, "/quotes", body)


def test_a_held_order_lowers_every_cached_figure_at_once(client):
    offer = make_offer(units_total=5)
    assert free_on_page(client) == "5 units"
    assert free_in_api(client) == 5
    assert quote_units(client, offer, 5).status_code == 200

    make_order(offer=offer, units=2)

    assert free_on_page(client) == "3 units"
    assert free_in_api(client) == 3
    refused = quote_units(client, offer, 5)
    assert refused.status_code == 409
    assert refused.json()["detail"] == f"Only 3 {offer.gpu_model} units are free right now."


def test_a_listing_cached_before_the_commit_is_dropped_on_commit(
    django_capture_on_commit_callbacks,
):
    """A request that read the rows before the commit and cached them meanwhile is stale:
    the bump on commit leaves its entry behind."""
    offer = make_offer(units_total=5)
    with django_capture_on_commit_callbacks(execute=True):
        make_order(offer=offer, units=2)
        assert caching.cached("listings", lambda: "rows before the commit") == (
            "rows before the commit"
        )
    assert caching.cached("listings", lambda: "rows after the commit") == "rows after the commit"


def test_a_lapsed_hold_shows_within_the_cache_time(client, settings):
    settings.KERNODECK_CATALOG_CACHE_SECONDS = 5
    settings.KERNODECK_ORDER_HOLD_SECONDS = 600
    offer = make_offer(units_total=5)
    clock.freeze(T0)
    order = make_order(offer=offer, units=2)
    clock.freeze(order.hold_until - timedelta(seconds=1))
    assert free_on_page(client) == "3 units"
    assert free_in_api(client) == 3

    clock.freeze(order.hold_until + timedelta(seconds=1))  # lapsed; the entry is 2 s old
    assert free_on_page(client) == "3 units"
    assert free_in_api(client) == 3

    clock.freeze(order.hold_until + timedelta(seconds=4))  # the entry is 5 s old
    assert free_on_page(client) == "5 units"
    assert free_in_api(client) == 5
    assert quote_units(client, offer, 5).status_code == 200


def _cancel(offer):
    order = make_order(offer=offer, units=2)
    yield
    settlement_orders.order_cancel(order=order, actor=order.owner)


def _settle_lapsed(offer):
    """A lapsed order holds nothing; settling it takes its units (it waits for slots)."""
    clock.freeze(T0)
    order = make_order(offer=offer, units=2)
    clock.freeze(order.hold_until + timedelta(minutes=1))
    yield
    settlement_orders.order_settle(order=order, cause={"test": "settled"})


def _extend_lapsed_hold(offer):
    clock.freeze(T0)
    order = make_order(offer=offer, units=2)
    clock.freeze(order.hold_until + timedelta(minutes=1))
    yield
    order_services.order_hold_extend(order=order, until=clock.now() + timedelta(hours=1))


def _end_rental(offer):
    order = make_settled_order(offer=offer, units=2)
    provisioning_services.rental_allocate(order=order)
    yield
    provisioning_services.rental_refund(order=order, reason="test", actor=make_user(staff=True))


def _add_node(offer):
    yield
    provisioning_services.node_create(name="extra", offer=offer, gpu_count=2, host="extra.test")


def _node_to_maintenance(offer):
    yield
    provisioning_services.node_state_set(
        node=Node.objects.get(offer=offer),
        state=NodeState.MAINTENANCE,
        reason="fan",
        actor=make_user(staff=True),
    )


@pytest.mark.parametrize(
    ("change", "before", "after"),
    [
        (_cancel, 3, 5),
        (_settle_lapsed, 5, 3),
        (_extend_lapsed_hold, 5, 3),
        (_end_rental, 3, 5),
        (_add_node, 5, 7),
        (_node_to_maintenance, 5, 0),
    ],
    ids=lambda value: getattr(value, "__name__", "").strip("_") or None,
)
def test_every_change_of_holds_and_fleet_shows_at_once(client, change, before, after):
    offer = make_offer(units_total=5)
    steps = change(offer)
    next(steps)
    assert free_in_api(client) == before
    assert free_on_page(client) == f"{before} units"

    next(steps, None)

    assert free_in_api(client) == after
    assert free_on_page(client) == (
        f"{after} units" if after else '<span class="badge bad">none</span>'
    )


def test_a_new_offer_and_an_operators_price_edit_show_at_once(client):
    from kernodeck.catalog.services import offer_create_if_missing

    offer = make_offer(gpu_model="H100 80 GB")
    assert [item["slug"] for item in client.get("/api/v1/offers").json()] == [offer.slug]

    offer_create_if_missing(
        slug="l4",
        prices={7: "50.00"},
        gpu_model="L4 24 GB",
        vendor="nvidia",
        backend="cuda",
        memory_gib=24,
        preparations=["pytorch"],
    )
    assert "L4 24 GB" in client.get(reverse("catalog:list"), **EN).content.decode()

    operator = make_user(staff=True, is_superuser=True)
    client.force_login(operator)
    prices = list(OfferPrice.objects.filter(offer=offer).order_by("days"))
    form = {
        "gpu_model": offer.gpu_model,
        "vendor": offer.vendor,
        "backend": offer.backend,
        "memory_gib": offer.memory_gib,
        "gpus_per_unit": offer.gpus_per_unit,
        "preparations": offer.preparations,
        "description": "",
        "is_active": "on",
        "sort_order": 0,
        "prices-TOTAL_FORMS": len(prices),
        "prices-INITIAL_FORMS": len(prices),
        "prices-MIN_NUM_FORMS": 1,
        "prices-MAX_NUM_FORMS": 1000,
    }
    for i, price in enumerate(prices):
        form.update(
            {
                f"prices-{i}-id": price.pk,
                f"prices-{i}-offer": offer.pk,
                f"prices-{i}-days": price.days,
                f"prices-{i}-unit_price_usd": "999.00"
                if price.days == 7
                else price.unit_price_usd,
            }
        )
    answer = client.post(f"/backoffice/catalog/offer/{offer.pk}/change/", form)
    assert answer.status_code == 302, answer.content.decode()[:2000]

    listed = {item["slug"]: item["prices"] for item in client.get("/api/v1/offers").json()}
    assert listed[offer.slug]["7"] == "999.00"
    assert "999.00" in client.get(reverse("catalog:list"), **EN).content.decode()


def test_each_language_has_its_own_catalog(client):
    make_offer(units_total=5)

    english = client.get(reverse("catalog:list"), **EN).content.decode()
    spanish = client.get(reverse("catalog:list"), **ES).content.decode()
    english_again = client.get(reverse("catalog:list"), **EN).content.decode()

    assert "Free now" in english and "Disponibles ahora" not in english
    assert "Disponibles ahora" in spanish and "Free now" not in spanish
    assert "Disponibles ahora" not in english_again


def test_the_cached_catalog_holds_nothing_of_the_visitor(client):
    """Only the content is shared: the header and the CSRF token are each visitor's."""
    import re

    from django.test import Client

    make_offer(units_total=5)
    client.force_login(make_user())
    theirs = client.get(reverse("catalog:list"), **EN).content.decode()
    again = client.get(reverse("catalog:list"), **EN).content.decode()
    anonymous = Client().get(reverse("catalog:list"), **EN).content.decode()

    assert "Sign out" in theirs and "Sign out" not in anonymous
    token = re.compile(r'"X-CSRFToken": "([^"]+)"')
    assert token.search(theirs).group(1) != token.search(again).group(1)  # masked anew
    assert "5 units" in theirs and "5 units" in anonymous


def test_filtered_and_refused_filters_are_not_mixed_up(client):
    make_offer(gpu_model="Big ROCm", memory_gib=192, backend="rocm")
    make_offer(gpu_model="Small CUDA", memory_gib=24)

    everything = client.get(reverse("catalog:list"), **EN).content.decode()
    rocm = client.get(reverse("catalog:list"), {"backend": "rocm"}, **EN).content.decode()
    refused = client.get(reverse("catalog:list"), {"backend": "tpu"}, **EN).content.decode()

    assert "Small CUDA" in everything and "Big ROCm" in everything
    assert "Small CUDA" not in rocm and "Clear filters" in rocm
    assert "Small CUDA" in refused and "tpu" in refused  # the error names the choice


def test_no_cache_time_means_live_figures(client, settings):
    settings.KERNODECK_CATALOG_CACHE_SECONDS = 0
    offer = make_offer(units_total=5)
    clock.freeze(T0)
    order = make_order(offer=offer, units=2)
    assert free_in_api(client) == 3
    clock.freeze(order.hold_until)
    assert free_in_api(client) == 5


def test_a_cache_hit_asks_the_database_nothing(client, django_assert_num_queries):
    offer = make_offer(units_total=5)
    client.get(reverse("catalog:list"), **EN)
    client.get("/api/v1/offers")
    quote_units(client, offer, 1)

    with django_assert_num_queries(0):
        assert client.get(reverse("catalog:list"), **EN).status_code == 200
        assert client.get(reverse("catalog:list"), **ES).status_code == 200
        assert client.get("/api/v1/offers").status_code == 200
        assert quote_units(client, offer, 1).status_code == 200
        assert quote_units(client, offer, 6).status_code == 409
        assert (
            api_post(
                client,
                "/quotes",
                {"offer": "nope", "days": 7, "units": 1, "preparation": "pytorch"},
            ).status_code
            == 422
        )


def test_the_configurator_reads_the_catalogs_entry_and_asks_the_database_nothing(
    client, django_assert_num_queries
):
    offer = make_offer(units_total=5)
    configurator = reverse("catalog:configure", args=[offer.slug])
    summary = reverse("catalog:summary", args=[offer.slug])
    client.get(reverse("catalog:list"), **EN)

    with django_assert_num_queries(0):
        page = client.get(configurator, {"days": 7, "units": 5}, **EN)
        refused = client.get(summary, {"days": 7, "units": 6}, **EN)
        unknown = client.get(reverse("catalog:configure", args=["nope"]), **EN)
    assert page.status_code == 200
    assert "5 units" in page.content.decode()
    assert refused.status_code == 200
    assert f"Only 5 {offer.gpu_model} units are free right now." in refused.content.decode()
    assert unknown.status_code == 404

    make_order(offer=offer, units=2)  # a change bumps the entry both pages read
    refused = client.get(summary, {"days": 7, "units": 5}, **EN)
    assert f"Only 3 {offer.gpu_model} units are free right now." in refused.content.decode()


def test_without_a_working_cache_the_catalog_and_orders_still_work(client, settings, caplog):
    """The cache is an optimisation: when Redis is down, pages read the database and
    changes still commit (their bump is logged, not raised)."""
    offer = make_offer(units_total=5)
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # nothing listens there
        }
    }

    make_order(offer=offer, units=2)

    assert free_in_api(client) == 3
    assert free_on_page(client) == "3 units"
    assert quote_units(client, offer, 3).status_code == 200
    assert "catalog cache" in caplog.text
