from django.apps import AppConfig
from django.core.signals import request_finished
from django.utils.translation import gettext_lazy as _


class ObservabilityConfig(AppConfig):
    """Metrics for Prometheus, the request id and the log format; no models."""

    name = "kernodeck.observability"
    verbose_name = _("Observability")

    def ready(self):
        from kernodeck.observability import logcontext

        # The request's id stays bound until its response is done (middleware.py).
        request_finished.connect(logcontext.clear, dispatch_uid="kernodeck-log-context")
