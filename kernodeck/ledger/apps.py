from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "kernodeck.ledger"
    verbose_name = "Balance ledger"
