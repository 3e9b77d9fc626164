"""Page content that is the same for every visitor in a language (the FAQ, the guides):
rendered once per process, language and key, and kept until the process ends (a deploy
restarts it). The layout around it (the visitor's header, messages) is rendered for each
request. Off under DEBUG, so that a template edited in development shows at once."""

from collections.abc import Callable, Hashable

from django.conf import settings
from django.template.loader import render_to_string
from django.utils.translation import get_language

_rendered: dict[tuple, str] = {}


def rendered(template: str, context: Callable[[], dict], *, key: Hashable = None) -> str:
    """`template` rendered with `context()` in the active language, from the process cache.

    `key` tells apart what one template renders differently (a guide's slug); it must come
    from a closed set (known slugs), never from raw input, so the cache stays small."""
    if settings.DEBUG:
        return render_to_string(template, context())
    cache_key = (template, get_language(), key)
    html = _rendered.get(cache_key)
    if html is None:
        html = _rendered[cache_key] = render_to_string(template, context())
    return html
