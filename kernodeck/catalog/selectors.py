from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Prefetch
from django.utils.translation import gettext as _

from kernodeck.catalog import caching
from kernodeck.catalog.models import Offer, OfferPrice
from kernodeck.catalog.quotes import PriceSheet
from kernodeck.core.errors import InvalidInput
from kernodeck.orders import capacity

HOURS_PER_DAY = 24


def offers_active():
    return Offer.objects.filter(is_active=True).prefetch_related(
        Prefetch("prices", queryset=OfferPrice.objects.order_by("days"))
    )


def offer_get_active(*, slug: str) -> Offer:
    """The active offer with this slug, or InvalidInput naming the `offer` field."""
    offer = offers_active().filter(slug=str(slug or "")[:50]).first()
    if offer is None:
        raise InvalidInput(
            _("There is no GPU offer called “%(slug)s”.") % {"slug": slug}, field="offer"
        )
    return offer


def offer_get(*, slug: str) -> Offer:
    """Any offer, active or not, by slug (operators' tools), or InvalidInput."""
    offer = Offer.objects.filter(slug=str(slug or "")[:50]).first()
    if offer is None:
        raise InvalidInput(
            _("There is no GPU offer called “%(slug)s”.") % {"slug": slug}, field="offer"
        )
    return offer


def price_sheet(offer: Offer, prices: dict[int, Decimal] | None = None) -> PriceSheet:
    """What a quote needs of the offer; `prices` (days -> USD) if already read."""
    if prices is None:
        prices = {price.days: price.unit_price_usd for price in offer.prices.all()}
    return PriceSheet(
        slug=offer.slug,
        gpu_model=offer.gpu_model,
        gpus_per_unit=offer.gpus_per_unit,
        unit_prices=prices,
        preparations=tuple(offer.preparations),
    )


@dataclass(frozen=True)
class OfferListing:
    offer: Offer
    prices: dict[int, Decimal]
    price_from_gpu_hour: Decimal | None
    units_available: int


def _gpu_hour(offer: Offer, days: int, unit_price: Decimal) -> Decimal:
    return (unit_price / (days * HOURS_PER_DAY * offer.gpus_per_unit)).quantize(Decimal("0.01"))


def _listings_for(offers) -> list[OfferListing]:
    available = capacity.units_available_by_offer(offers=offers)
    listings = []
    for offer in offers:
        prices = {price.days: price.unit_price_usd for price in offer.prices.all()}
        hourly = [_gpu_hour(offer, days, price) for days, price in prices.items()]
        listings.append(
            OfferListing(
                offer=offer,
                prices=prices,
                price_from_gpu_hour=min(hourly) if hourly else None,
                units_available=available[offer.pk],
            )
        )
    return listings


def _all_listings() -> list[OfferListing]:
    return _listings_for(list(offers_active()))


def _chosen(listings, *, backend: str, min_memory_gib: int, sort: str) -> list[OfferListing]:
    listings = [
        item
        for item in listings
        if (not backend or item.offer.backend == backend)
        and item.offer.memory_gib >= (min_memory_gib or 0)
    ]
    if sort in {"price", "-price"}:
        listings.sort(
            key=lambda item: (item.price_from_gpu_hour is None, item.price_from_gpu_hour or 0),
            reverse=sort == "-price",
        )
    elif sort == "memory":
        listings.sort(key=lambda item: (-item.offer.memory_gib, item.offer.slug))
    return listings


def offer_listings(*, backend: str = "", min_memory_gib: int = 0, sort: str = "price"):
    """Active offers with their prices, cheapest GPU-hour and units free right now."""
    return _chosen(_all_listings(), backend=backend, min_memory_gib=min_memory_gib, sort=sort)


def offer_listings_cached(*, backend: str = "", min_memory_gib: int = 0, sort: str = "price"):
    """offer_listings from the catalog cache (catalog/caching.py): exact after every change
    of offers, prices, fleet or holds, at most a few seconds late on a lapsed hold.

    For pages and lists every visitor reads alike; decisions (order registration, settling)
    count live under the offer's lock.
    """
    listings = caching.cached("listings", _all_listings)
    return _chosen(listings, backend=backend, min_memory_gib=min_memory_gib, sort=sort)


def _price_sheets() -> dict[str, tuple[PriceSheet, int]]:
    return {
        item.offer.slug: (price_sheet(item.offer, item.prices), item.units_available)
        for item in offer_listings_cached()
    }


def price_sheet_cached(*, slug: str) -> tuple[PriceSheet, int]:
    """The active offer's price sheet and units free, from the catalog cache (small plain
    values, quick to read back), or the InvalidInput offer_get_active gives."""
    found = caching.cached_here("sheets", _price_sheets).get(str(slug or "")[:50])
    if found is None:
        raise InvalidInput(
            _("There is no GPU offer called “%(slug)s”.") % {"slug": slug}, field="offer"
        )
    return found


def offer_listing_cached(*, slug: str) -> OfferListing:
    """The active offer's listing (the offer, its prices, units free) from the catalog cache,
    the same entry the catalog reads; or the InvalidInput offer_get_active gives."""
    slug = str(slug or "")[:50]
    found = next((item for item in offer_listings_cached() if item.offer.slug == slug), None)
    if found is None:
        raise InvalidInput(
            _("There is no GPU offer called “%(slug)s”.") % {"slug": slug}, field="offer"
        )
    return found
