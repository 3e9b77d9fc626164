from django.apps import AppConfig


class OrdersConfig(AppConfig):
    name = "kernodeck.orders"
    verbose_name = "Orders"
