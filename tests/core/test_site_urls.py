"""`{% site_url %}` (core/templatetags/site_urls.py) answers what `{% url %}` does, and
forgets what it kept when the URLconf, the resolver or the script prefix change."""

import re
from pathlib import Path

import pytest
from django.template import Context, Template
from django.test import RequestFactory
from django.urls import NoReverseMatch, clear_url_caches, set_script_prefix, set_urlconf
from django.utils import translation

from tests.core import site_url_confs


def render(source: str, **context) -> str:
    return Template("{% load site_urls %}" + source).render(Context(context))


@pytest.fixture(autouse=True)
def _default_prefix():
    yield
    set_script_prefix("/")
    set_urlconf(None)


def test_every_link_of_the_base_template_is_the_one_url_gives():
    base = (Path(__file__).parents[2] / "kernodeck/templates/base.html").read_text()
    names = re.findall(r"\{% site_url '([^']+)'", base)
    assert len(names) >= 15 and "{% url" not in base
    for language in ("en", "es"):
        with translation.override(language):
            for name in names:
                assert render(f"{{% site_url '{name}' %}}") == Template(
                    f"{{% url '{name}' %}}"
                ).render(Context())


def test_a_changed_urlconf_is_followed(settings):
    settings.ROOT_URLCONF = site_url_confs.First
    assert render("{% site_url 'here' %}") == "/first/"
    settings.ROOT_URLCONF = site_url_confs.Second
    assert render("{% site_url 'here' %}") == "/second/"


def test_a_request_urlconf_is_followed(settings):
    settings.ROOT_URLCONF = site_url_confs.First
    assert render("{% site_url 'here' %}") == "/first/"
    set_urlconf(site_url_confs.Second)
    assert render("{% site_url 'here' %}") == "/second/"


def test_cleared_url_caches_are_followed(settings):
    settings.ROOT_URLCONF = "tests.core.site_url_confs"
    assert render("{% site_url 'here' %}") == "/first/"
    site_url_confs.urlpatterns[0] = site_url_confs.path(
        "", site_url_confs.include(site_url_confs.second)
    )
    try:
        clear_url_caches()
        assert render("{% site_url 'here' %}") == "/second/"
    finally:
        site_url_confs.urlpatterns[0] = site_url_confs.path(
            "", site_url_confs.include(site_url_confs.first)
        )
        clear_url_caches()


def test_the_script_prefix_and_the_language_are_followed(settings):
    settings.ROOT_URLCONF = site_url_confs.WithLanguages
    with translation.override("en"):
        assert render("{% site_url 'here' %}") == "/en/third/"
    with translation.override("es"):
        assert render("{% site_url 'here' %}") == "/es/third/"
        set_script_prefix("/shop/")
        assert render("{% site_url 'here' %}") == "/shop/es/third/"


def test_a_missing_name_raises_or_stores_nothing(settings):
    settings.ROOT_URLCONF = site_url_confs.First
    with pytest.raises(NoReverseMatch):
        render("{% site_url 'nowhere' %}")
    assert render("{% site_url 'nowhere' as link %}[{{ link }}]") == "[]"
    assert render("{% site_url 'here' as link %}[{{ link }}]") == "[/first/]"


def test_the_current_app_is_passed_as_url_does():
    request = RequestFactory().get("/")
    request.current_app = "admin"
    context = Context({})
    context.request = request
    url = Template("{% load site_urls %}{% site_url 'admin:index' %}").render(context)
    assert url == Template("{% url 'admin:index' %}").render(context) == "/backoffice/"


def test_a_url_with_arguments_is_refused_at_parse_time():
    from django.template import TemplateSyntaxError

    with pytest.raises(TemplateSyntaxError):
        Template("{% load site_urls %}{% site_url 'orders:detail' 'KD-1' %}")
