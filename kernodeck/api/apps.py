from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "kernodeck.api"
    verbose_name = "JSON API"
