from django.shortcuts import render

from kernodeck.core import fragments, pagecache
from kernodeck.guides import faq as faq_content
from kernodeck.sizing.guides import GUIDE_FOR_FAQ


@pagecache.shared_page
def home(request):
    return render(request, "guides/home.html")


def _faq_context() -> dict:
    # Each section's entries with the practical guide that goes deeper, when there is one.
    sections = [
        (section, [(entry, GUIDE_FOR_FAQ.get(entry.slug)) for entry in section.entries])
        for section in faq_content.SECTIONS
    ]
    return {"sections": sections}


@pagecache.shared_page
def faq(request):
    """The FAQ: its content rendered once per language (core/fragments.py)."""
    content = fragments.rendered("guides/_faq_content.html", _faq_context)
    return render(request, "guides/faq.html", {"content": content})
