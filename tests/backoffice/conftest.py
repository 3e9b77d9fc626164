from tests.payments.conftest import configured, fresh_rates

__all__ = ["configured", "fresh_rates"]
