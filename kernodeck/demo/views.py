from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from kernodeck.core.errors import NotFound, ServiceError
from kernodeck.demo import payments
from kernodeck.payments import selectors as payment_selectors


def _demo_only(view):
    """Outside demo mode the demo's pages do not exist: 404 before anything else."""

    def wrapped(request, *args, **kwargs):
        if not payments.demo_is_on():
            raise Http404
        return view(request, *args, **kwargs)

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


@_demo_only
@login_required
@require_POST
def payment_simulate(request, intent_id):
    """A button of the demo panel on a payment page: pay, mine or end the window."""
    try:
        intent = payment_selectors.intent_get_for_owner(owner=request.user, intent_id=intent_id)
    except NotFound:
        raise Http404 from None
    try:
        payments.demo_payment_simulate(
            intent=intent, action=request.POST.get("action", ""), actor=request.user
        )
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.info(request, _("Demo: done. The watcher has been asked to look at once."))
    return redirect(reverse("payments:detail", args=[intent.pk]) + "#status")
