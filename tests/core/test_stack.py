"""core/stack.py's middlewares answer exactly as the library middlewares they replace."""

import pytest
from csp.decorators import csp_update
from csp.utils import build_policy
from django.contrib import messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.http import HttpResponse
from django.test import Client, RequestFactory, override_settings
from django.utils import translation

from kernodeck.core import stack

pytestmark = pytest.mark.django_db


def _run(middleware_class, request, view):
    return middleware_class(view)(request)


def test_the_csp_header_is_django_csps_own():
    response = Client().get("/api/v1/offers")
    assert response["Content-Security-Policy"] == build_policy()
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert "Content-Security-Policy-Report-Only" not in response


def test_a_response_with_its_own_policy_still_gets_it_built():
    @csp_update({"img-src": "https://img.example.org"})
    def view(request):
        return HttpResponse("ok")

    response = _run(stack.CSPMiddleware, RequestFactory().get("/"), view)
    assert "img-src 'self' data: https://img.example.org" in response["Content-Security-Policy"]


def test_a_nonce_asked_for_is_built_as_django_csp_does():
    def view(request):
        str(request.csp_nonce)
        return HttpResponse("ok")

    request = RequestFactory().get("/")
    response = _run(stack.CSPMiddleware, request, view)
    assert response["Content-Security-Policy"] == build_policy(nonce=request._csp_nonce)


def test_a_changed_policy_is_read_again_and_excluded_prefixes_hold():
    policy = {
        "DIRECTIVES": {"default-src": ["'none'"]},
        "EXCLUDE_URL_PREFIXES": ["/skip/"],
    }
    with override_settings(
        CONTENT_SECURITY_POLICY=policy, CONTENT_SECURITY_POLICY_REPORT_ONLY=policy
    ):
        view = lambda request: HttpResponse("ok")  # noqa: E731
        kept = _run(stack.CSPMiddleware, RequestFactory().get("/x/"), view)
        skipped = _run(stack.CSPMiddleware, RequestFactory().get("/skip/y"), view)
    assert kept["Content-Security-Policy"] == "default-src 'none'"
    assert kept["Content-Security-Policy-Report-Only"] == "default-src 'none'"
    assert "Content-Security-Policy" not in skipped
    after = Client().get("/api/v1/offers")
    assert after["Content-Security-Policy"] == build_policy()


def test_a_header_the_view_set_is_left_alone():
    def view(request):
        response = HttpResponse("ok")
        response["Content-Security-Policy"] = "sandbox"
        return response

    response = _run(stack.CSPMiddleware, RequestFactory().get("/"), view)
    assert response["Content-Security-Policy"] == "sandbox"


def test_messages_are_stored_and_shown_as_before():
    def add(request):
        messages.success(request, "Saved.")
        return HttpResponse("ok")

    def show(request):
        return HttpResponse(" ".join(str(m) for m in messages.get_messages(request)))

    factory = RequestFactory()
    request = factory.get("/")
    request.session = {}
    response = _run(stack.MessageMiddleware, request, add)
    assert isinstance(request._messages, FallbackStorage)
    assert response.cookies["messages"].value  # stored in the cookie, as Django does

    request = factory.get("/", HTTP_COOKIE=f"messages={response.cookies['messages'].value}")
    request.session = {}
    assert _run(stack.MessageMiddleware, request, show).content == b"Saved."


def test_a_request_that_never_touches_messages_makes_no_storage():
    request = RequestFactory().get("/")
    response = _run(stack.MessageMiddleware, request, lambda request: HttpResponse("ok"))
    assert request._messages._wrapped is stack.empty
    assert "messages" not in response.cookies


@pytest.mark.parametrize(
    ("headers", "language"),
    [
        ({}, "en"),
        ({"HTTP_ACCEPT_LANGUAGE": "es-ES,es;q=0.9"}, "es"),
        ({"HTTP_ACCEPT_LANGUAGE": "fr"}, "en"),
        ({"HTTP_COOKIE": "django_language=es", "HTTP_ACCEPT_LANGUAGE": "en"}, "es"),
    ],
)
def test_the_language_is_chosen_and_said_as_django_does(headers, language):
    response = Client().get("/api/v1/offers", **headers)
    assert response["Content-Language"] == language
    assert "Accept-Language" in response["Vary"]
    translation.activate("en")


def test_with_language_prefixes_it_is_djangos_own(settings):
    settings.ROOT_URLCONF = "tests.core.i18n_urls"
    response = Client().get("/hello/", HTTP_ACCEPT_LANGUAGE="es")
    assert response.status_code == 302 and response["Location"] == "/es/hello/"
    assert Client().get("/es/hello/").content == b"es"
    translation.activate("en")
