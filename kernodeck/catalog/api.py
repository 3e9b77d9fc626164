"""Catalog endpoints: offers and quotes. Public: no token needed."""

import json

from django.http import HttpResponse
from django.utils.translation import get_language
from ninja import Field, Router, Schema
from ninja.responses import NinjaJSONEncoder
from pydantic import StrictInt, TypeAdapter

from kernodeck.catalog import caching, selectors
from kernodeck.catalog.models import DURATIONS, MAX_UNITS, MIN_UNITS, Preparation
from kernodeck.core.money import usd_str
from kernodeck.core.schemas import InputSchema
from kernodeck.orders import selectors as order_selectors

router = Router(tags=["catalog"])


class OfferOut(Schema):
    slug: str
    gpu: str
    vendor: str
    backend: str
    memory_gib: int
    gpus_per_unit: int
    prices: dict[str, str]
    units_available: int
    preparations: list[str]


class QuoteIn(InputSchema):
    """A configuration. Limits are documented here and checked by the quote itself, so the
    API refuses with the very words the configurator shows (422 naming the field)."""

    offer: str = Field(max_length=64, description="An offer's slug (GET /offers).")
    days: StrictInt = Field(
        description="Rental length in days.", json_schema_extra={"enum": list(DURATIONS)}
    )
    units: StrictInt = Field(
        description="Rental units (one GPU each; two on B200 offers).",
        json_schema_extra={"minimum": MIN_UNITS, "maximum": MAX_UNITS},
    )
    preparation: str = Field(
        description="Preparation (the starting environment); the offer lists those it offers.",
        json_schema_extra={"enum": list(Preparation.values)},
    )


class QuoteOut(Schema):
    offer: str
    days: int
    units: int
    gpus: int
    preparation: str
    unit_price_usd: str
    total_usd: str


def quote_out(quote) -> dict:
    return {
        "offer": quote.offer,
        "days": quote.days,
        "units": quote.units,
        "gpus": quote.gpus,
        "preparation": quote.preparation,
        "unit_price_usd": usd_str(quote.unit_price_usd),
        "total_usd": usd_str(quote.total_usd),
    }


def _offers_out() -> list[dict]:
    return [
        {
            "slug": item.offer.slug,
            "gpu": item.offer.gpu_model,
            "vendor": item.offer.vendor,
            "backend": item.offer.backend,
            "memory_gib": item.offer.memory_gib,
            "gpus_per_unit": item.offer.gpus_per_unit,
            "prices": {str(days): usd_str(price) for days, price in item.prices.items()},
            "units_available": item.units_available,
            "preparations": list(item.offer.preparations),
        }
        for item in selectors.offer_listings_cached()
    ]


def _offers_body() -> bytes:
    """The list as the API renders it, checked against its schema once, when built."""
    offers_out = TypeAdapter(list[OfferOut]).validate_python(_offers_out())
    return json.dumps([offer.model_dump() for offer in offers_out], cls=NinjaJSONEncoder).encode()


@router.get("/offers", auth=None, response=list[OfferOut])
@caching.shared_page()
def offers(request):
    """Every active offer, with per-unit prices by duration (days) and units free now."""
    # The same for every caller of a language: kept rendered in the catalog cache, and
    # the whole answer, to callers without a token or cookies, in each process's page
    # cache (core/pagecache.py), which follows the catalog version as the catalog page does.
    body = caching.cached(f"api-offers:{get_language()}", _offers_body)
    return _json(body)


@router.post("/quotes", auth=None, response=QuoteOut)
@caching.shared_page(post=True)
def quotes(request, payload: QuoteIn):
    """Price a configuration exactly as the configurator and order registration do."""
    # A pure function of the body, the language and the catalog: a caller without a token
    # or cookies who sends the very bytes of an earlier priced configuration is answered
    # from this process's copy (core/pagecache.py), which follows the catalog version as
    # the offers list does.
    quote = order_selectors.configuration_quote_cached(**payload.dict())
    # The answer is built here in QuoteOut's shape (strings and integers only, which
    # tests/api check against the schema), so it goes out as bytes without django-ninja
    # validating it through QuoteOut again and rendering it a second time.
    return _json(json.dumps(quote_out(quote), cls=NinjaJSONEncoder).encode())


def _json(body: bytes) -> HttpResponse:
    """An answer rendered as django-ninja renders one (its JSON, its content type)."""
    return HttpResponse(body, content_type=JSON)


JSON = "application/json; charset=utf-8"
