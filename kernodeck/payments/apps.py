from django.apps import AppConfig
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _


class PaymentsConfig(AppConfig):
    name = "kernodeck.payments"
    verbose_name = _("Payments")

    def ready(self):
        # A bad or PRIVATE extended key must stop the process at start-up, not at the
        # first payment: load the wallets now.
        from kernodeck.payments import checks  # noqa: F401 (registers the system checks)
        from kernodeck.payments.registry import configured_wallets
        from kernodeck.payments.wallets import WalletConfigError

        try:
            configured_wallets()
        except WalletConfigError as exc:
            raise ImproperlyConfigured(str(exc)) from None
