from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "kernodeck.demo"
    verbose_name = "Demo"
