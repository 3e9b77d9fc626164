"""Small URLconfs for tests/core/test_site_urls.py: one name at different paths."""

from django.conf.urls.i18n import i18n_patterns
from django.http import HttpResponse
from django.urls import include, path


def _view(request):
    return HttpResponse("ok")


first = [path("first/", _view, name="here")]
second = [path("second/", _view, name="here")]
with_languages = i18n_patterns(path("third/", _view, name="here"))


class First:
    urlpatterns = first


class Second:
    urlpatterns = second


class WithLanguages:
    urlpatterns = with_languages


urlpatterns = [path("", include(first))]
