from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "kernodeck.accounts"
    verbose_name = "Accounts"
