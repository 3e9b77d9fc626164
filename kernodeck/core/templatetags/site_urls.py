"""`{% site_url 'name' %}`: Django's `{% url 'name' %}` for a URL without arguments (the
header's and footer's links of every page), reversed once per process instead of on every
render.

`reverse()` walks the resolver each time (about 20 µs): the header of a signed-in page had
eleven of them. The answer is kept per URL name, the current app (as `{% url %}` passes it)
and the active language (a URLconf with `i18n_patterns` reverses per language), and it is
dropped with the resolver and the script prefix it came from: `clear_url_caches()` and a
changed ROOT_URLCONF (tests) make a new resolver, a request's own `urlconf` another one.
`{% site_url 'name' as var %}` stores the URL, or "" where the name does not exist, as
`{% url … as var %}` does; without `as`, a name that does not exist raises NoReverseMatch.
"""

from django import template
from django.urls import NoReverseMatch, get_resolver, get_script_prefix, get_urlconf, reverse
from django.utils import translation
from django.utils.html import conditional_escape

register = template.Library()

# (resolver, script prefix, {(name, current app, language): url}), replaced as a whole.
_memo = (None, None, {})


def _current_app(context):
    # As Django's URLNode.render finds it.
    try:
        return context.request.current_app
    except AttributeError:
        try:
            return context.request.resolver_match.namespace
        except AttributeError:
            return None


def cached_reverse(name: str, current_app=None) -> str:
    global _memo
    resolver, prefix, urls = _memo
    now = get_resolver(get_urlconf()), get_script_prefix()
    if resolver is not now[0] or prefix != now[1]:
        urls = {}
        _memo = (*now, urls)
    key = (name, current_app, translation.get_language())
    try:
        return urls[key]
    except KeyError:
        url = urls[key] = reverse(name, current_app=current_app)
        return url


class SiteUrlNode(template.Node):
    def __init__(self, name: str, asvar: str | None):
        self.name, self.asvar = name, asvar

    def render(self, context):
        if self.asvar:
            try:
                url = cached_reverse(self.name, _current_app(context))
            except NoReverseMatch:
                url = ""
            context[self.asvar] = url
            return ""
        url = cached_reverse(self.name, _current_app(context))
        return conditional_escape(url) if context.autoescape else url


@register.tag
def site_url(parser, token):
    """{% site_url 'view-name' %} or {% site_url 'view-name' as var %}."""
    bits = token.split_contents()
    asvar = None
    if len(bits) == 4 and bits[2] == "as":
        asvar = bits[3]
        bits = bits[:2]
    if len(bits) != 2 or bits[1][0] not in "'\"" or bits[1][0] != bits[1][-1]:
        raise template.TemplateSyntaxError(
            "site_url takes one quoted URL name (and optionally 'as var'); use {% url %} "
            "for a URL with arguments"
        )
    return SiteUrlNode(bits[1][1:-1], asvar)
