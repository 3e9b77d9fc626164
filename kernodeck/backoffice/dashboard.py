"""The back-office landing page: what needs a human now, then how the shop is doing.

It is the admin site's index (sites.py), so it asks what the index asks (any back-office
permission); each section and link shows only to operators holding the permission of the
screen it leads to.
"""

from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from kernodeck.accounts.permissions import has_permissions
from kernodeck.core import clock
from kernodeck.observability import dashboard, selectors

REVIEW = "payments.review_payment"
OPERATE = "provisioning.operate_rentals"
SUPPORT = "support.answer_ticket"
OUTBOX = "notifications.view_outbox"
ORDERS = "orders.view_order"
RATES = "payments.view_rate"
AUDIT = "core.view_auditevent"

# (URL name, label, permission): every operator screen, the admin pages operators use daily
# (rates, the audit trail) included; the other tables are listed under "Records".
SCREENS = (
    ("backoffice:review_queue", _("Payment review"), REVIEW),
    ("desk:rentals", _("Rentals desk"), OPERATE),
    ("desk:fleet", _("Fleet"), OPERATE),
    ("backoffice_nodes:list", _("Automated nodes (SSH)"), OPERATE),
    ("admin:payments_rate_changelist", _("Exchange rates"), RATES),
    ("support_staff:inbox", _("Support inbox"), SUPPORT),
    ("notifications:outbox", _("E-mail outbox"), OUTBOX),
    ("admin:core_auditevent_changelist", _("Audit trail"), AUDIT),
)


def _can(request, perm: str) -> bool:
    return has_permissions(request.user, perm)


def dashboard_page(request, *, app_list, site_header):
    """Render the dashboard; `app_list` is the admin's list of model pages for this user."""
    can = {
        "review": _can(request, REVIEW),
        "operate": _can(request, OPERATE),
        "support": _can(request, SUPPORT),
        "outbox": _can(request, OUTBOX),
        "orders": _can(request, ORDERS),
    }
    screens = [
        {"url": reverse(name), "label": label}
        for name, label, perm in SCREENS
        if _can(request, perm)
    ]
    if app_list:
        screens.append({"url": "#kd-records", "label": _("Admin: every table")})
    now = clock.now()
    period = dashboard.period_choose(request.GET.get("days"))
    context = {
        "site_header": site_header,
        "can": can,
        "screens": screens,
        "app_list": app_list,
        "now": now,
        "attention": selectors.attention(now=now) if any(can.values()) else None,
        "board": dashboard.build(period=period, now=now)
        if can["orders"] or can["operate"] or can["review"]
        else None,
    }
    return render(request, "backoffice/dashboard.html", context)
