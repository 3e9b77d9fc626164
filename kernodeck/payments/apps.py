from django.apps import AppConfig


class PaymentsConfig(AppConfig):
    name = "kernodeck.payments"
    verbose_name = "Payments"
