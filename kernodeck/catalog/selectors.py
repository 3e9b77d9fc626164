from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Prefetch
from django.utils.translation import gettext as _

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


def price_sheet(offer: Offer) -> PriceSheet:
    return PriceSheet(
        slug=offer.slug,
        gpu_model=offer.gpu_model,
        gpus_per_unit=offer.gpus_per_unit,
        unit_prices={price.days: price.unit_price_usd for price in offer.prices.all()},
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
    available = capacity.units_available_by_offer(offer_ids=[offer.pk for offer in offers])
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


def offer_listings(*, backend: str = "", min_memory_gib: int = 0, sort: str = "price"):
    """Active offers with their prices, cheapest GPU-hour and units free right now."""
    offers = offers_active()
    if backend:
        offers = offers.filter(backend=backend)
    if min_memory_gib:
        offers = offers.filter(memory_gib__gte=min_memory_gib)
    listings = _listings_for(list(offers))
    if sort in {"price", "-price"}:
        listings.sort(
            key=lambda item: (item.price_from_gpu_hour is None, item.price_from_gpu_hour or 0),
            reverse=sort == "-price",
        )
    elif sort == "memory":
        listings.sort(key=lambda item: (-item.offer.memory_gib, item.offer.slug))
    return listings


def offer_listing(*, offer: Offer) -> OfferListing:
    return _listings_for([offer])[0]
