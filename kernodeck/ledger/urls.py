from django.urls import path

from kernodeck.ledger import views

app_name = "ledger"
urlpatterns = [
    path("", views.balance, name="balance"),
    path("statement.csv", views.statement_csv, name="statement_csv"),
    path("topups/", views.topup_create, name="topup_create"),
    path("topups/<uuid:topup_id>/", views.topup_detail, name="topup"),
    path("topups/<uuid:topup_id>/pay/", views.topup_pay, name="topup_pay"),
]
