from django.http import JsonResponse
from django.shortcuts import render


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
