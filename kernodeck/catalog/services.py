from decimal import Decimal

from django.db import IntegrityError, transaction

from kernodeck.catalog import caching
from kernodeck.catalog.models import Offer, OfferPrice
from kernodeck.core.services import audit_record


def catalog_changed() -> None:
    """Offers, prices, the fleet or a hold changed: the cached catalog is stale from now on.

    Every service that writes one of these calls it inside its transaction. The version is
    bumped at once, so later reads of the same transaction miss the cache, and again on
    commit, so a listing another request cached meanwhile from the rows before the commit
    is dropped too. A rollback only costs one cache miss.
    """
    caching.bump()
    transaction.on_commit(caching.bump)


def offer_create_if_missing(*, slug: str, prices: dict[int, Decimal], **fields) -> Offer | None:
    """Create an offer with its prices unless the slug exists (operators' edits win).

    Idempotent even when two seeds run at once: the one whose offer the unique slug
    refuses (in a savepoint) creates nothing and answers None, as if it had seen it."""
    with transaction.atomic():
        if Offer.objects.filter(slug=slug).exists():
            return None
        try:
            with transaction.atomic():
                offer = Offer.objects.create(slug=slug, **fields)
        except IntegrityError:
            if Offer.objects.filter(slug=slug).exists():
                return None
            raise
        OfferPrice.objects.bulk_create(
            OfferPrice(offer=offer, days=days, unit_price_usd=price)
            for days, price in prices.items()
        )
        audit_record(
            action="catalog.offer_created",
            target=offer,
            after={"slug": slug, "prices": {str(d): str(p) for d, p in prices.items()}},
        )
        catalog_changed()
    return offer
