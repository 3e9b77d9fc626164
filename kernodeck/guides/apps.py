from django.apps import AppConfig


class GuidesConfig(AppConfig):
    name = "kernodeck.guides"
    verbose_name = "Guides and FAQ"
