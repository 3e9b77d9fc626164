from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ObservabilityConfig(AppConfig):
    """Metrics for Prometheus, the request id and the log format; no models."""

    name = "kernodeck.observability"
    verbose_name = _("Observability")
