"""Provisioning drivers, chosen per node by its `driver` code.

`KERNODECK_PROVISIONING_DRIVERS` maps codes to classes by dotted path; a bad entry stops
the process at start-up (`drivers_check`).
"""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from kernodeck.provisioning.drivers.base import ProvisioningDriver

_cache: dict[str, ProvisioningDriver] = {}


def driver_for(code: str) -> ProvisioningDriver:
    """The driver instance for a node's driver code."""
    if code not in _cache:
        path = settings.KERNODECK_PROVISIONING_DRIVERS.get(code)
        if not path:
            raise ImproperlyConfigured(f"No provisioning driver is configured for {code!r}.")
        _cache[code] = import_string(path)()
    return _cache[code]


def drivers_check() -> None:
    """Load every configured driver once, so a typo fails at start-up, not at 3 a.m."""
    _cache.clear()
    for code in settings.KERNODECK_PROVISIONING_DRIVERS:
        driver = driver_for(code)
        if not isinstance(driver, ProvisioningDriver) or driver.code != code:
            raise ImproperlyConfigured(f"{code!r} does not name a provisioning driver.")
