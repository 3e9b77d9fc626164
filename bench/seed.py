"""Load the benchmark's data into the configured database and print what the load needs.

Run by bench/run.py with DJANGO_SETTINGS_MODULE=bench.settings. Prints one JSON line:
{"token": ..., "offer": ..., "orders": N}.
"""

import json
import sys

import django


def main(orders: int) -> None:
    django.setup()
    from django.conf import settings

    from kernodeck.accounts import services as account_services
    from kernodeck.accounts.models import User
    from kernodeck.catalog.models import Offer
    from kernodeck.demo.services import demo_seed_catalog, demo_seed_payment_methods
    from kernodeck.orders import services as order_services

    assert settings.KERNODECK_DEMO
    demo_seed_catalog()
    demo_seed_payment_methods()
    customer = User.objects.create_user(
        "bench@kernodeck.test", "bench password long enough 42", first_name="B", last_name="C"
    )
    _token, raw = account_services.api_token_create(user=customer, name="bench")
    offer = Offer.objects.filter(is_active=True).order_by("pk").first()
    for _ in range(orders):
        # Cancelled at once, so capacity never runs out; they still list in GET /orders.
        order = order_services.order_register(
            owner=customer, offer=offer.slug, days=7, units=1, preparation="pytorch"
        )
        order_services.order_cancel(order=order, actor=customer)
    print(json.dumps({"token": raw, "offer": offer.slug, "orders": orders}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
