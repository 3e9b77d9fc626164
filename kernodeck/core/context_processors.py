from django.conf import settings


def site(request):
    return {
        "demo_mode": settings.KERNODECK_DEMO,
        "support_email": settings.KERNODECK_SUPPORT_EMAIL,
    }
