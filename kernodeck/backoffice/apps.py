from django.apps import AppConfig


class BackofficeConfig(AppConfig):
    name = "kernodeck.backoffice"
    verbose_name = "Back-office"
