from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "kernodeck.core"
    verbose_name = "Core"
