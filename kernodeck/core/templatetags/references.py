"""`{{ order.reference|ref }}`: a reference that never breaks at its hyphens, in a sentence."""

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def ref(value):
    return format_html('<span class="ref">{}</span>', value)
