from pathlib import Path

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

FAVICON = Path(__file__).resolve().parents[1] / "static" / "kernodeck" / "favicon.ico"


def permission_denied(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "You do not have permission to do this."}, status=403)
    return render(request, "errors/403.html", status=403)


def page_not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return render(request, "errors/404.html", status=404)


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Internal server error. It has been logged."}, status=500)
    return render(request, "errors/500.html", status=500)


@require_safe
def favicon(request):
    """/favicon.ico, which browsers ask for on every site whatever the page's <link rel=icon>."""
    response = HttpResponse(FAVICON.read_bytes(), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response
