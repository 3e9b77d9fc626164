from tests.payments.conftest import configured, demo_mode, fresh_rates  # noqa: F401
