"""The Grafana dashboard and the alert rules in docs/ name only metrics /metrics serves."""

import json
import re
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.observability.helpers import TOKEN

pytestmark = pytest.mark.django_db
DOCS = Path(__file__).resolve().parents[2] / "docs"
NAME = re.compile(r"\bkernodeck_[a-z_]+\b")
SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def served_families(client) -> set[str]:
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").content.decode()
    return {family.name for family in text_string_to_metric_families(text)}


def family_of(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def test_the_grafana_dashboard_and_the_alert_rules_use_served_metrics(client, metrics_token):
    served = served_families(client)
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    expressions = [
        target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])
    ]
    rules = yaml.safe_load((DOCS / "prometheus-rules.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    expressions += [rule["expr"] for rule in alerts]

    used = {family_of(name) for expr in expressions for name in NAME.findall(expr)}
    assert used - served == set()
    assert len(used) >= 15
    assert {rule["alert"] for rule in alerts} >= {
        "KernodeckWatcherStalled",
        "KernodeckReleaseOverdue",
        "KernodeckNodeDownWithLiveRentals",
        "KernodeckReviewQueueOld",
    }
