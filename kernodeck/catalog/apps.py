from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "kernodeck.catalog"
    verbose_name = "Catalog"
