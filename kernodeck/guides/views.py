from django.shortcuts import render

from kernodeck.guides import faq as faq_content


def home(request):
    return render(request, "guides/home.html")


def faq(request):
    return render(request, "guides/faq.html", {"sections": faq_content.SECTIONS})
