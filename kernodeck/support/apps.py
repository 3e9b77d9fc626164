from django.apps import AppConfig


class SupportConfig(AppConfig):
    name = "kernodeck.support"
    verbose_name = "Support"
