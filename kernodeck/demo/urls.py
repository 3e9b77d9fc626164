from django.urls import path

from kernodeck.demo import views

app_name = "demo"

urlpatterns = [
    path(
        "payments/<uuid:intent_id>/simulate/",
        views.payment_simulate,
        name="payment_simulate",
    ),
]
