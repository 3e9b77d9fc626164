from django.urls import path

from kernodeck.notifications import views

app_name = "notifications"
urlpatterns = [
    path("", views.outbox, name="outbox"),
    path("<int:message_id>/retry/", views.outbox_retry, name="outbox_retry"),
]
