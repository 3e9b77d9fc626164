"""A URLconf with language prefixes, for tests/core/test_stack.py."""

from django.conf.urls.i18n import i18n_patterns
from django.http import HttpResponse
from django.urls import path
from django.utils import translation

urlpatterns = i18n_patterns(
    path("hello/", lambda request: HttpResponse(translation.get_language()))
)
