from django.shortcuts import render

from kernodeck.guides import faq as faq_content
from kernodeck.sizing.guides import GUIDE_FOR_FAQ


def home(request):
    return render(request, "guides/home.html")


def faq(request):
    # Each section's entries with the practical guide that goes deeper, when there is one.
    sections = [
        (section, [(entry, GUIDE_FOR_FAQ.get(entry.slug)) for entry in section.entries])
        for section in faq_content.SECTIONS
    ]
    return render(request, "guides/faq.html", {"sections": sections})
