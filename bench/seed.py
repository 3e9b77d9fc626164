"""Load the benchmark's data into the configured database and print what the load needs.

Run by bench/run.py with DJANGO_SETTINGS_MODULE=bench.settings. Prints one JSON line:
{"token": ..., "offer": ..., "preparations": [...], "orders": N,
"pay_orders": [[reference, token], ...],
"pages": [[what, path, cookie], ...]}.

`pages` are the signed-in pages the load reaches with a session cookie: the bench
customer's order file, and the staff list pages at about 100 rows (bench/staff.py's PAGES,
on tests/budgets' two data sets, as bench/staff.py seeds them), each with the session of
who reads it (an operator; the balance statement its customer).

The orders to pay (`pay_orders`, one per POST of payment instructions: an order with live
instructions refuses new ones) belong, in turn, to PAYERS other customers (each request
locks its customer's account, and eight clients are eight customers, not one), so the
first customer's order list keeps its N orders; their offer is inactive, so their holds
take no catalog units.
"""

import json
import sys

import django

PAYERS = 8


def _orders_to_pay(count: int) -> list[tuple[str, str]]:
    from datetime import timedelta
    from decimal import Decimal

    from kernodeck.accounts import services as account_services
    from kernodeck.accounts.models import User
    from kernodeck.catalog.services import offer_create_if_missing
    from kernodeck.core import clock
    from kernodeck.orders.models import Order
    from kernodeck.orders.references import new_reference
    from tests.factories import order_row

    payers = []
    for n in range(PAYERS):
        payer = User.objects.create_user(
            f"payer{n}@kernodeck.test", "bench password long enough 42", first_name="P"
        )
        _token, raw = account_services.api_token_create(user=payer, name="bench-pay")
        payers.append((payer, raw))
    offer = offer_create_if_missing(
        slug="bench-payments",
        prices={7: Decimal("100.00")},
        gpu_model="Bench GPU",
        vendor="nvidia",
        backend="cuda",
        memory_gib=80,
        preparations=["pytorch"],
        is_active=False,
    )
    now = clock.now()
    references = sorted({new_reference() for _ in range(count)})
    # Written in bulk: registering thousands through the service would take minutes, and
    # only their rows matter here (awaiting payment, held for two hours).
    Order.objects.bulk_create(
        order_row(
            offer=offer,
            reference=reference,
            owner=payers[i % PAYERS][0],
            days=7,
            price="100.00",
            created_at=now,
            hold_until=now + timedelta(hours=2),
        )
        for i, reference in enumerate(references)
    )
    return [(reference, payers[i % PAYERS][1]) for i, reference in enumerate(references)]


def main(orders: int, pay_orders: int) -> None:
    django.setup()
    from django.conf import settings

    from kernodeck.accounts import services as account_services
    from kernodeck.accounts.models import User
    from kernodeck.catalog.models import Offer
    from kernodeck.demo.services import demo_seed_catalog, demo_seed_payment_methods
    from kernodeck.orders import services as order_services
    from kernodeck.settlement import orders as settlement_orders

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
        settlement_orders.order_cancel(order=order, actor=customer)
    to_pay = _orders_to_pay(pay_orders)
    print(
        json.dumps(
            {
                "token": raw,
                "offer": offer.slug,
                "preparations": list(offer.preparations),
                "orders": orders,
                "pay_orders": to_pay,
                "pages": _signed_in_pages(customer),
            }
        )
    )


def _signed_in_pages(customer) -> list[list[str]]:
    from django.conf import settings
    from django.db import transaction
    from django.test import Client

    from bench.staff import PAGES
    from kernodeck.orders.models import Order
    from tests.budgets import data as review_data
    from tests.budgets import operations_data

    with transaction.atomic():
        operations = operations_data.build(100)
        dataset = review_data.build(500)

    def cookie(user) -> str:
        client = Client(HTTP_HOST="127.0.0.1")
        client.force_login(user)
        name = settings.SESSION_COOKIE_NAME
        return f"{name}={client.cookies[name].value}"

    sessions = {"operator": cookie(dataset.operator), "customer": cookie(dataset.customer)}
    order = Order.objects.filter(owner=customer).order_by("pk").first()
    order_file = f"/orders/{order.reference}/"
    pages = [["GET /orders/<reference>/ (order file)", order_file, cookie(customer)]]
    for _key, what, path, who in PAGES:
        pages.append([f"GET {what}", path(operations, dataset), sessions[who]])
    return pages


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 100,
        int(sys.argv[2]) if len(sys.argv) > 2 else 0,
    )
