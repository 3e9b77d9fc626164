from django.http import Http404
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.translation import get_language

from kernodeck.catalog import caching, selectors
from kernodeck.catalog.forms import CatalogFilterForm, ConfigureForm
from kernodeck.catalog.quotes import quote_errors
from kernodeck.core import pagecache
from kernodeck.core.errors import InvalidInput, ServiceError
from kernodeck.core.forms import add_service_error
from kernodeck.orders import selectors as order_selectors

DEFAULTS = {"days": "7", "units": "1"}


@caching.shared_page(params=CatalogFilterForm.base_fields)
def catalog(request):
    """The catalog. Its content (filters and offers) is the same for every visitor with the
    same language and filters, so it is rendered once into the catalog cache; the layout
    around it (the visitor's header, the CSRF token) is rendered for each request, or for
    anonymous visitors kept whole (core/pagecache.py), the plain and valid filters only."""
    if not request.GET:
        # The plain catalog, most visitors' page: its form is built only to render it.
        html = caching.cached(
            f"page:{get_language()}", lambda: _catalog_content(CatalogFilterForm())
        )
    else:
        form = CatalogFilterForm(request.GET)
        if form.is_valid():
            # A valid form's fields hold one of their few choices (or nothing), and the
            # content depends on nothing else: they and the language name it.
            raw = ":".join(repr(form.data.get(name)) for name in form.fields)
            html = caching.cached(f"page:{get_language()}:{raw}", lambda: _catalog_content(form))
        else:
            pagecache.decline(request)
            html = _catalog_content(form)  # the errors echo the input: never shared
    return render(request, "catalog/catalog.html", {"content": html})


def _catalog_content(form) -> str:
    filters = form.cleaned_data if form.is_valid() else {}
    listings = selectors.offer_listings_cached(
        backend=filters.get("backend") or "",
        min_memory_gib=filters.get("min_memory") or 0,
        sort=filters.get("sort") or "price",
    )
    filtered = any(filters.values()) if filters else False
    return render_to_string(
        "catalog/_catalog_content.html",
        {"form": form, "listings": listings, "filtered": filtered},
    )


def _configuration(request, offer):
    data = {**DEFAULTS, "preparation": offer.preparations[0] if offer.preparations else ""}
    data.update(
        {key: request.GET[key] for key in ("days", "units", "preparation") if key in request.GET}
    )
    return data


def _status(form) -> int:
    """422 when the visitor's input is refused (the field says why), else 200.

    A configuration that is valid but cannot be served now (no free units) stays a 200:
    the input is fine, the page explains the situation.
    """
    return 422 if getattr(form, "input_refused", False) else 200


def _invalid_fields(form) -> list[str]:
    """The fields the summary asks to fix (the form highlights them), not the form-wide errors."""
    return [name for name in form.errors if name in form.fields]


def _summary(listing, data):
    """The quote for the configurator's summary, and the form showing any refusal.

    Prices and units free come from the catalog's cache entry (`listing`), read once: the
    figures the catalog shows, a few seconds late at most on a lapsed hold; registering
    the order counts live under the offer's lock."""
    offer = listing.offer
    form = ConfigureForm(data, preparations=offer.preparations)
    form.is_valid()
    errors = quote_errors(
        selectors.price_sheet(offer, listing.prices),
        days=data.get("days"),
        units=data.get("units"),
        preparation=data.get("preparation"),
    )
    for error in errors:
        add_service_error(form, error)
    if errors:
        form.input_refused = True
        return form, None
    try:
        quote = order_selectors.listing_quote(
            listing=listing,
            days=data.get("days"),
            units=data.get("units"),
            preparation=data.get("preparation"),
        )
    except ServiceError as exc:
        add_service_error(form, exc)
        return form, None
    return form, quote


def _listing_or_404(slug):
    try:
        return selectors.offer_listing_cached(slug=slug)
    except InvalidInput:
        raise Http404 from None


# Anonymous visitors share the page (core/pagecache.py); a refused input answers 422,
# which is never stored.
@caching.shared_page(params=("days", "units", "preparation"))
def configure(request, slug):
    listing = _listing_or_404(slug)
    offer = listing.offer
    data = _configuration(request, offer)
    form, quote = _summary(listing, data)
    return render(
        request,
        "catalog/configure.html",
        {
            "offer": offer,
            "listing": listing,
            "form": form,
            "quote": quote,
            "invalid_fields": _invalid_fields(form),
        },
        status=_status(form),
    )


def configure_summary(request, slug):
    """The live summary (htmx): the same quote as the full page, as a fragment."""
    listing = _listing_or_404(slug)
    offer = listing.offer
    data = _configuration(request, offer)
    form, quote = _summary(listing, data)
    return render(
        request,
        "catalog/_summary_update.html",
        {"offer": offer, "form": form, "quote": quote, "invalid_fields": _invalid_fields(form)},
        status=_status(form),
    )
