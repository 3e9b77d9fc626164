from django.apps import AppConfig


class SizingConfig(AppConfig):
    name = "kernodeck.sizing"
    verbose_name = "GPU sizing and environment checks"
