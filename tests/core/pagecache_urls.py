"""The site's URLs plus shareable pages that do what a stored page must not (tests only)."""

from django.contrib import messages
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from config.urls import handler403, handler404, handler500  # noqa: F401
from config.urls import urlpatterns as site_urlpatterns
from kernodeck.core import pagecache


@pagecache.shared_page
def sets_a_cookie(request):
    response = render(request, "guides/home.html")
    response.set_cookie("chosen", "yes")
    return response


@pagecache.shared_page
def writes_the_session(request):
    request.session["seen"] = True
    return render(request, "guides/home.html")


@pagecache.shared_page
def queues_a_message(request):
    messages.info(request, "Welcome.")
    return render(request, "guides/home.html")


@pagecache.shared_page
def not_found(request):
    return render(request, "guides/home.html", status=404)


@csrf_exempt
@pagecache.shared_page
def counts_posts(request):
    """A shared page that also takes a POST (a form posted back to its page)."""
    counts_posts.calls += 1
    return JsonResponse({"method": request.method, "calls": counts_posts.calls})


counts_posts.calls = 0


@csrf_exempt
@pagecache.shared_page(post=True)
def prices_posts(request):
    """A calculation that declares its answer to a POST a function of the body."""
    prices_posts.calls += 1
    return JsonResponse({"method": request.method, "calls": prices_posts.calls})


prices_posts.calls = 0


urlpatterns = [
    path("test/posted/", counts_posts),
    path("test/priced/", prices_posts),
    path("test/cookie/", sets_a_cookie),
    path("test/session/", writes_the_session),
    path("test/message/", queues_a_message),
    path("test/missing/", not_found),
    *site_urlpatterns,
]
