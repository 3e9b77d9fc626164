from django.urls import path

from kernodeck.backoffice import support_views as views

app_name = "support_staff"
urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("<uuid:ticket_id>/", views.ticket_case, name="ticket"),
    path("access/<uuid:request_id>/", views.access_case, name="access"),
    path("<uuid:ticket_id>/canned/<slug:key>/", views.canned_answer, name="canned"),
    path(
        "<uuid:ticket_id>/attachments/<int:attachment_id>/",
        views.attachment,
        name="attachment",
    ),
]
