"""`{% support_url "payment" order=ref payment=id as url %}`: the ticket form for a case,
with the order (and payment) filled in. Every "contact support" text links through it."""

from django import template
from django.urls import reverse
from django.utils.http import urlencode

register = template.Library()


@register.simple_tag
def support_url(kind: str = "", *, order: str = "", payment="", topic: str = "") -> str:
    params = {"kind": kind, "order": order, "payment": payment, "topic": topic}
    query = urlencode({k: str(v) for k, v in params.items() if v})
    return reverse("support:new") + (f"?{query}" if query else "")
