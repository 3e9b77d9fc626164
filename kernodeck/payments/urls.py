from django.urls import path

from kernodeck.payments import views

app_name = "payments"
urlpatterns = [
    path("<uuid:intent_id>/", views.detail, name="detail"),
    path("<uuid:intent_id>/status/", views.status, name="status"),
    path("<uuid:intent_id>/declare/", views.declare, name="declare"),
    path("<uuid:intent_id>/abandon/", views.abandon, name="abandon"),
]
