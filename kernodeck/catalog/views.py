from django.http import Http404
from django.shortcuts import render

from kernodeck.catalog import selectors
from kernodeck.catalog.forms import CatalogFilterForm, ConfigureForm
from kernodeck.catalog.quotes import quote_errors
from kernodeck.core.errors import InvalidInput, ServiceError
from kernodeck.core.forms import add_service_error
from kernodeck.orders import selectors as order_selectors

DEFAULTS = {"days": "7", "units": "1"}


def catalog(request):
    form = CatalogFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    listings = selectors.offer_listings(
        backend=filters.get("backend") or "",
        min_memory_gib=filters.get("min_memory") or 0,
        sort=filters.get("sort") or "price",
    )
    filtered = any(filters.values()) if filters else False
    return render(
        request,
        "catalog/catalog.html",
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


def _summary(offer, data):
    """The quote for the configurator's summary, and the form showing any refusal."""
    form = ConfigureForm(data, preparations=offer.preparations)
    form.is_valid()
    errors = quote_errors(
        selectors.price_sheet(offer),
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
        quote = order_selectors.offer_quote(
            offer_obj=offer,
            days=data.get("days"),
            units=data.get("units"),
            preparation=data.get("preparation"),
        )
    except ServiceError as exc:
        add_service_error(form, exc)
        return form, None
    return form, quote


def _offer_or_404(slug):
    try:
        return selectors.offer_get_active(slug=slug)
    except InvalidInput:
        raise Http404 from None


def configure(request, slug):
    offer = _offer_or_404(slug)
    data = _configuration(request, offer)
    form, quote = _summary(offer, data)
    return render(
        request,
        "catalog/configure.html",
        {
            "offer": offer,
            "listing": selectors.offer_listing(offer=offer),
            "form": form,
            "quote": quote,
        },
        status=_status(form),
    )


def configure_summary(request, slug):
    """The live summary (htmx): the same quote as the full page, as a fragment."""
    offer = _offer_or_404(slug)
    data = _configuration(request, offer)
    form, quote = _summary(offer, data)
    return render(
        request,
        "catalog/_summary.html",
        {"offer": offer, "form": form, "quote": quote},
        status=_status(form),
    )
