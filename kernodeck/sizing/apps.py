from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SizingConfig(AppConfig):
    name = "kernodeck.sizing"
    verbose_name = _("GPU sizing and environment checks")
