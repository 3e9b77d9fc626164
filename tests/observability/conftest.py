import pytest

from tests.observability.helpers import TOKEN
from tests.payments.conftest import configured, fresh_rates

__all__ = ["configured", "fresh_rates"]


@pytest.fixture
def metrics_token(settings):
    settings.KERNODECK_METRICS_TOKEN = TOKEN
    settings.KERNODECK_METRICS_ALLOW_NETWORKS = ()
    return TOKEN
