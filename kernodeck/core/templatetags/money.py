from django import template

from kernodeck.core.money import money as money_text
from kernodeck.core.money import money_figure as money_figure_text
from kernodeck.core.money import rate_figure as rate_figure_text

register = template.Library()


@register.filter
def money(value, places=2):
    """`{{ amount|money }}`: the one written form of USD amounts in the page's language."""
    if value is None or value == "":
        return ""
    return money_text(value, places=int(places))


@register.filter
def money_figure(value, places=2):
    """`{{ amount|money_figure }}`: the figure alone, where the text already says "USD"."""
    if value is None or value == "":
        return ""
    return money_figure_text(value, places=int(places))


@register.filter
def rate_figure(value):
    """`{{ rate|rate_figure }}`: a USD-per-coin rate in the page's language."""
    if value is None or value == "":
        return ""
    return rate_figure_text(value)
