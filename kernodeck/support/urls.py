from django.urls import path

from kernodeck.support import views

app_name = "support"
urlpatterns = [
    path("", views.ticket_list, name="list"),
    path("new/", views.ticket_new, name="new"),
    path("preview/", views.preview, name="preview"),
    path("cant-sign-in/", views.access_request, name="access_request"),
    path("cant-sign-in/sent/", views.access_sent, name="access_sent"),
    path("<uuid:ticket_id>/", views.ticket_detail, name="detail"),
    path(
        "<uuid:ticket_id>/attachments/<int:attachment_id>/",
        views.attachment,
        name="attachment",
    ),
    path(
        "<uuid:ticket_id>/extensions/<int:extension_id>/pay-with-balance/",
        views.extension_pay_with_balance,
        name="extension_pay_with_balance",
    ),
    path(
        "<uuid:ticket_id>/extensions/<int:extension_id>/pay/",
        views.extension_pay,
        name="extension_pay",
    ),
]
