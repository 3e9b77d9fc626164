from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProvisioningConfig(AppConfig):
    name = "kernodeck.provisioning"
    verbose_name = _("Provisioning")

    def ready(self):
        # A bad KERNODECK_FIELD_KEYS or driver setting stops the process at start-up.
        from kernodeck.provisioning import checks, drivers, secrets  # noqa: F401 (checks)

        secrets.keys_check()
        drivers.drivers_check()
