"""The operators' desk, mounted under /backoffice/ (before the admin's catch-all)."""

from django.urls import path

from kernodeck.provisioning import views

app_name = "desk"
urlpatterns = [
    path("rentals/", views.desk, name="rentals"),
    path("rentals/<str:reference>/", views.rental, name="rental"),
    path("rentals/<str:reference>/deliver/", views.rental_deliver, name="deliver"),
    path("rentals/<str:reference>/access/", views.rental_access, name="access"),
    path("rentals/<str:reference>/<str:action>/", views.rental_action, name="action"),
    path("alerts/<int:alert_id>/acknowledge/", views.alert_acknowledge, name="alert_ack"),
    path("fleet/", views.fleet, name="fleet"),
    path("fleet/<str:name>/state/", views.node_state, name="node_state"),
]
