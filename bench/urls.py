"""The real URLs plus `/bench/trivial`, a JSON view behind the same middleware stack."""

from django.http import JsonResponse
from django.urls import path

from config.urls import urlpatterns as real_urlpatterns


def trivial(request):
    return JsonResponse({"ok": True})


urlpatterns = [path("bench/trivial", trivial), *real_urlpatterns]
