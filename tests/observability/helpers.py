"""Reading /metrics the way Prometheus does."""

from prometheus_client.parser import text_string_to_metric_families

TOKEN = "metrics-token-for-the-tests-0123456789"


def scrape(client, *, token=TOKEN, **extra) -> dict:
    """{(sample name, sorted labels): value} of one scrape, parsed by prometheus_client."""
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    response = client.get("/metrics", **headers, **extra)
    assert response.status_code == 200, response.content
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels) -> float:
    """One sample's value; 0 when the scrape does not carry it."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)
