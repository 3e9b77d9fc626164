"""`/metrics`: who may read it, and the text Prometheus reads.

Closed unless configured: with neither KERNODECK_METRICS_TOKEN nor KERNODECK_METRICS_ALLOW
the path answers 404, as if it did not exist. With one of them, that one grants access;
with both, a scrape needs both (the right bearer token from an allowed address).
"""

import hmac
import ipaddress
import logging
import os

from django.conf import settings

logger = logging.getLogger(__name__)

METRICS_PATH = "/metrics"


def _bearer(request) -> str:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _space, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _address_allowed(request, networks) -> bool:
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    if address.version == 6 and address.ipv4_mapped:
        address = address.ipv4_mapped
    return any(address in network for network in networks)


def access(request) -> int:
    """200 when the request may read the metrics, else 404 (closed) or 403 (refused)."""
    token = settings.KERNODECK_METRICS_TOKEN
    networks = settings.KERNODECK_METRICS_ALLOW_NETWORKS
    if not token and not networks:
        return 404
    if token and not hmac.compare_digest(_bearer(request).encode(), token.encode()):
        return 403
    if networks and not _address_allowed(request, networks):
        return 403
    return 200


def _process_registry():
    """The counters and histograms of every process writing to PROMETHEUS_MULTIPROC_DIR,
    or of this process alone when none is set."""
    from prometheus_client import REGISTRY, CollectorRegistry, multiprocess

    from kernodeck.observability import instruments  # noqa: F401  (declares the metrics)

    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


def render() -> bytes:
    """The scrape's text: the counted metrics, then the shop's state from the database."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import GaugeMetricFamily

    from kernodeck.observability.collector import ShopCollector

    body = generate_latest(_process_registry())
    shop = CollectorRegistry(auto_describe=False)
    shop.register(ShopCollector())
    try:
        shop_text = generate_latest(shop)
        ok = 1
    except Exception:
        # The database is down or a read broke: still answer with the process metrics.
        logger.exception("metrics: reading the shop's state failed")
        shop_text, ok = b"", 0
    status = CollectorRegistry(auto_describe=False)

    class _Status:
        def collect(self):
            yield GaugeMetricFamily(
                "kernodeck_metrics_shop_ok",
                "1 when this scrape could read the shop's state from the database.",
                value=ok,
            )

    status.register(_Status())
    return body + shop_text + generate_latest(status)


def content_type() -> str:
    from prometheus_client import CONTENT_TYPE_LATEST

    return CONTENT_TYPE_LATEST
