from django.urls import path

from kernodeck.backoffice import views

app_name = "backoffice"
urlpatterns = [
    path("", views.review_queue, name="review_queue"),
    path("intent/<uuid:intent_id>/", views.intent_case, name="intent_case"),
    path("transfer/<int:transfer_id>/", views.transfer_case, name="transfer_case"),
]
