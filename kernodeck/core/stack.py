"""Drop-in versions of three library middlewares that answer the same for less work per request.

Every request passes through the whole middleware stack, so what a middleware does for a
request that does not need it is paid by every page and every API call (docs/performance.md,
"The middleware stack"). These two keep their library's behaviour exactly:

- `CSPMiddleware` (django-csp): the policy is built from settings once, not twice per
  response (django-csp rebuilds both headers, copying every directive, on each response).
  A response that carries its own policy (django-csp's decorators) still gets it built.
- `MessageMiddleware` (django.contrib.messages): the storage is made when a view or a
  template first touches `request._messages`, not for every request; a request that never
  touched it has nothing to store (the storage's `update` would do nothing), so its
  response is not looked at.
- `LocaleMiddleware` (Django's): with a URLconf without `i18n_patterns` (this site's: the
  language comes from the cookie or Accept-Language, never from the path) it skips looking
  for a language prefix in the path, twice per request, which could not change the answer.
"""

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from csp.middleware import CSPMiddleware as LibraryCSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.conf.urls.i18n import is_language_prefix_patterns_used
from django.contrib.messages.middleware import MessageMiddleware as LibraryMessageMiddleware
from django.contrib.messages.storage import default_storage
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.middleware.locale import LocaleMiddleware as LibraryLocaleMiddleware
from django.utils import translation
from django.utils.cache import patch_vary_headers
from django.utils.functional import SimpleLazyObject, empty

# What a response may carry to change its own policy (csp.decorators).
_OVERRIDES = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)
_DEBUG_EXEMPT = (404, 500)  # django-csp leaves Django's debug pages alone when DEBUG is on

_policies: dict[bool, tuple[str, tuple[str, ...]]] = {}  # report_only -> (header, excluded)


@receiver(setting_changed)
def _forget_policies(*, setting, **kwargs):
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _policies.clear()


def _policy(report_only: bool) -> tuple[str, tuple[str, ...]]:
    """The header django-csp builds from settings alone (no nonce: the policy names none,
    and build_policy adds one only where a directive asks for it), and the path prefixes
    that go without it."""
    found = _policies.get(report_only)
    if found is None:
        name = "CONTENT_SECURITY_POLICY_REPORT_ONLY" if report_only else "CONTENT_SECURITY_POLICY"
        prefixes = (getattr(settings, name, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
        found = (build_policy(report_only=report_only), tuple(prefixes))
        _policies[report_only] = found
    return found


def _nonce_asked_for(request) -> bool:
    return getattr(request, "_csp_nonce", None) is not None


class CSPMiddleware(LibraryCSPMiddleware):
    """django-csp's middleware with the settings' policy built once per process."""

    def process_response(self, request, response):
        if _nonce_asked_for(request) or any(
            getattr(response, name, None) is not None for name in _OVERRIDES
        ):
            return super().process_response(request, response)
        if response.status_code in _DEBUG_EXEMPT and settings.DEBUG:
            return response
        for report_only, header, exempt in (
            (False, HEADER, "_csp_exempt"),
            (True, HEADER_REPORT_ONLY, "_csp_exempt_ro"),
        ):
            policy, excluded = _policy(report_only)
            if (
                policy
                and header not in response
                and getattr(response, exempt, False) is False
                and not request.path_info.startswith(excluded)
            ):
                response[header] = policy
        # As django-csp: a nonce asked for after the header is written is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response


def messages_untouched(request) -> bool:
    """Whether nothing made the request's message storage (MessageMiddleware's, below):
    then nothing was added to it or read from it."""
    messages = getattr(request, "_messages", None)
    return isinstance(messages, SimpleLazyObject) and messages._wrapped is empty


class MessageMiddleware(LibraryMessageMiddleware):
    """django.contrib.messages' middleware with the storage made on first use."""

    def process_request(self, request):
        request._messages = SimpleLazyObject(lambda: default_storage(request))

    def process_response(self, request, response):
        if messages_untouched(request):
            return response  # never touched: nothing added, nothing read, nothing to store
        return super().process_response(request, response)


def _prefixes_used(request) -> bool:
    """Whether the request's URLconf has `i18n_patterns` (Django keeps the answer cached)."""
    return is_language_prefix_patterns_used(getattr(request, "urlconf", settings.ROOT_URLCONF))[0]


class LocaleMiddleware(LibraryLocaleMiddleware):
    """Django's LocaleMiddleware without the path lookups a URLconf without `i18n_patterns`
    makes pointless; with `i18n_patterns` it is Django's own."""

    def process_request(self, request):
        if _prefixes_used(request):
            return super().process_request(request)
        translation.activate(translation.get_language_from_request(request, check_path=False))
        request.LANGUAGE_CODE = translation.get_language()
        return None

    def process_response(self, request, response):
        if _prefixes_used(request):
            return super().process_response(request, response)
        # Django's answer when no language prefix is in use: no redirect to add one.
        patch_vary_headers(response, ("Accept-Language",))
        response.headers.setdefault("Content-Language", translation.get_language())
        return response
