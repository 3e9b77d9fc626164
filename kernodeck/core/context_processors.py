from django.conf import settings

from kernodeck.core import pagecache


def site(request):
    return {
        "demo_mode": settings.KERNODECK_DEMO,
        "support_email": settings.KERNODECK_SUPPORT_EMAIL,
    }


def csrf_placeholder(request):
    """While a page shared between anonymous visitors renders (core/pagecache.py), its
    `csrf_token` is a placeholder that the page cache replaces with each visitor's own.
    Listed after Django's built-in `csrf` processor, whose value it then replaces."""
    if pagecache.placeholder_wanted(request):
        return {"csrf_token": pagecache.PLACEHOLDER}
    return {}
