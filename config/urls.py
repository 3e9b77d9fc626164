from django.contrib import admin
from django.urls import include, path

from kernodeck.accounts import views as accounts_views
from kernodeck.api.api import api
from kernodeck.core import views as core_views
from kernodeck.ledger import views as ledger_views
from kernodeck.payments import views as payments_views

urlpatterns = [
    # First: Django tries the patterns in order, and no other pattern starts with api/v1/,
    # so an API call is resolved without walking the site's patterns first.
    path("api/v1/", api.urls),
    path("favicon.ico", core_views.favicon, name="favicon"),
    path("", include("kernodeck.guides.urls")),
    path("", include("kernodeck.sizing.urls")),
    path("gpus/", include("kernodeck.catalog.urls")),
    path("orders/", include("kernodeck.orders.urls")),
    path("orders/<str:reference>/pay/", payments_views.order_pay, name="order_pay"),
    path("payments/", include("kernodeck.payments.urls")),
    path(
        "orders/<str:reference>/pay-with-balance/",
        ledger_views.pay_with_balance,
        name="pay_with_balance",
    ),
    path("balance/", include("kernodeck.ledger.urls")),
    path("rentals/", include("kernodeck.provisioning.urls")),
    path("account/", include("kernodeck.accounts.urls")),
    path("support/", include("kernodeck.support.urls")),
    # Django's language switch, wrapped so a signed-in account remembers the choice.
    path("i18n/setlang/", accounts_views.language_set, name="set_language"),
    # Operators sign in through the same throttled sign-in page as customers.
    path("backoffice/login/", accounts_views.backoffice_login),
    path("backoffice/review/", include("kernodeck.backoffice.urls")),
    path("backoffice/nodes/", include("kernodeck.backoffice.node_urls")),
    path("backoffice/outbox/", include("kernodeck.notifications.urls")),
    path("backoffice/support/", include("kernodeck.backoffice.support_urls")),
    path("backoffice/", include("kernodeck.provisioning.desk_urls")),
    path("backoffice/", admin.site.urls),
    # The demo's payment panel: every view there answers 404 unless demo mode is on.
    path("demo/", include("kernodeck.demo.urls")),
]

handler403 = "kernodeck.core.views.permission_denied"
handler404 = "kernodeck.core.views.page_not_found"
handler500 = "kernodeck.core.views.server_error"
