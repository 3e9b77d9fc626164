"""The back-office dashboard: its numbers equal SQL counts on a seeded and on an empty
database, each section shows only with its permission, and the plots are plain SVG."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client

from kernodeck.core import clock
from kernodeck.observability import dashboard
from kernodeck.payments import services as payment_services
from kernodeck.provisioning import services as provisioning_services
from kernodeck.settlement import orders as settlement_orders
from tests.factories import make_offer, make_order, make_settled_order, make_ssh_key, make_user
from tests.ledger.helpers import funded_account, pay_topup

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def sql(query: str, *params) -> int:
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        return cursor.fetchone()[0]


def operator_client(*perms) -> Client:
    user = make_user(staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(user)
    return client


def superuser_client() -> Client:
    client = Client()
    client.force_login(make_user(staff=True, is_superuser=True))
    return client


@pytest.fixture
def seeded(configured, fresh_rates):
    """Orders paid by crypto and from the balance, one left unpaid, a delivered rental."""
    clock.freeze(NOW - timedelta(days=2))
    offer = make_offer(units_total=8, prices={3: "100.00", 7: "210.00", 30: "800.00"})
    paid = make_order(offer=offer)
    intent = payment_services.payment_intent_create_for_order(
        order=paid, method_code="usdt-tron", actor=paid.owner
    )
    pay_topup(intent)
    make_order(offer=offer)  # registered, never paid
    staff = make_user(staff=True)
    clock.freeze(NOW - timedelta(days=1))

    by_balance = make_order(offer=offer)
    funded_account(by_balance.owner, "500.00", staff)
    settlement_orders.order_pay_with_balance(order=by_balance, actor=by_balance.owner)
    rental = make_settled_order(offer=offer, units=2)
    make_ssh_key(rental.owner)
    provisioning_services.rental_allocate(order=rental)
    provisioning_services.rental_prepare(order=rental, actor=staff)
    clock.freeze(NOW - timedelta(days=1) + timedelta(minutes=20))
    provisioning_services.rental_deliver(
        order=rental, host="gpu-01.example.org", port=22, user="kd-rental", actor=staff
    )
    clock.freeze(NOW)
    return {"offer": offer}


def figures(response) -> dict[str, str]:
    """The data-figure values the page shows."""
    import re

    html = response.content.decode()
    return dict(re.findall(r'data-figure="([a-z-]+)">([^<]*)<', html))


def expected(since) -> dict[str, str]:
    """The same figures, counted with SQL over the tables."""
    sales = sql(
        "SELECT COALESCE(SUM(total_usd), 0) FROM orders_order WHERE settled_at >= %s", since
    )
    return {
        "orders-new": str(sql("SELECT COUNT(*) FROM orders_order WHERE created_at >= %s", since)),
        "orders-settled": str(
            sql("SELECT COUNT(*) FROM orders_order WHERE settled_at >= %s", since)
        ),
        "sales-usd": str(Decimal(str(sales)).quantize(Decimal("0.01"))),
        "delivered": str(sql("SELECT COUNT(*) FROM orders_order WHERE starts_at >= %s", since)),
        "gpus-busy": "{} / {}".format(
            sql("SELECT COUNT(*) FROM provisioning_allocation WHERE released_at IS NULL"),
            sql("SELECT COUNT(*) FROM provisioning_gpuslot"),
        ),
        "review-payments": str(
            sql(
                "SELECT COUNT(*) FROM payments_paymentintent WHERE resolution = '' AND "
                "(status IN ('underpaid', 'overpaid', 'late') OR "
                "(status = 'confirmed' AND review_reason != ''))"
            )
        ),
        "tickets-open": str(sql("SELECT COUNT(*) FROM support_ticket WHERE status = 'open'")),
        "emails-failed": str(
            sql("SELECT COUNT(*) FROM notifications_outboxmessage WHERE status = 'failed'")
        ),
    }


def _check_figures(response, period):
    since = datetime.combine(NOW.date() - timedelta(days=period - 1), datetime.min.time(), UTC)
    shown = figures(response)
    for name, value in expected(since).items():
        assert shown[name] == value, name
    return shown


def test_the_dashboard_numbers_equal_sql_counts_on_a_seeded_database(seeded):
    client = superuser_client()

    response = client.get("/backoffice/?days=7")

    assert response.status_code == 200
    shown = _check_figures(response, 7)
    assert shown["orders-new"] == "4"
    assert shown["orders-settled"] == "3"
    assert shown["sales-usd"] == "840.00"  # 210 + 210 + 2 units of 210
    assert shown["delivered"] == "1"
    assert shown["gpus-busy"] == "2 / 8"
    board = response.context["board"]
    sales_rows = {row[0]: row[1:] for row in board["sales"].table.rows}
    # usdt-tron then balance, then the day's total
    assert sales_rows[(NOW - timedelta(days=2)).date()] == [
        Decimal("210.00"),
        Decimal("0.00"),
        Decimal("210.00"),
    ]
    assert sales_rows[(NOW - timedelta(days=1)).date()] == [
        Decimal("0.00"),
        Decimal("630.00"),
        Decimal("630.00"),
    ]
    access = {row[0]: row[1:] for row in board["access"].table.rows}
    assert access[(NOW - timedelta(days=1)).date()] == [1, 20.0, 20.0]
    assert shown["watchers-down"] == "0"
    html = response.content.decode()
    assert html.count("<svg") == 4
    assert "<rect" in html and "<polyline" in html
    assert "style=" not in html.split("<main", 1)[-1]  # the CSP allows no inline style


def test_the_dashboard_of_an_empty_database_shows_zeros_and_empty_plots():
    clock.freeze(NOW)
    client = superuser_client()

    response = client.get("/backoffice/")

    assert response.status_code == 200
    shown = _check_figures(response, dashboard.DEFAULT_PERIOD)
    assert shown["orders-new"] == "0"
    assert shown["gpus-busy"] == "0 / 0"
    html = response.content.decode()
    assert "<svg" not in html
    assert html.count("Nothing in this period yet.") == 4


def test_a_period_outside_the_choices_falls_back_to_thirty_days():
    client = superuser_client()
    for raw in ("5", "abc", "", "90000000000000000000"):
        assert client.get("/backoffice/", {"days": raw}).context["board"]["period"] == 30
    assert client.get("/backoffice/", {"days": "90"}).context["board"]["period"] == 90


def _main(client) -> str:
    """The page's own content (the site header has links of its own)."""
    return client.get("/backoffice/").content.decode().split("<main", 1)[1]


def test_each_section_and_link_shows_only_with_its_permission():
    support = operator_client("support.answer_ticket")
    html = _main(support)
    assert "/backoffice/support/" in html
    assert "/backoffice/review/" not in html
    assert "/backoffice/outbox/" not in html
    assert "/backoffice/rentals/" not in html
    assert "How the shop is doing" not in html

    operator = operator_client("provisioning.operate_rentals", "notifications.view_outbox")
    html = _main(operator)
    for path in ("/backoffice/rentals/", "/backoffice/fleet/", "/backoffice/outbox/"):
        assert path in html
    assert "/backoffice/review/" not in html
    assert "Fleet utilisation" in html and "Sales per day" not in html

    everything = _main(superuser_client())
    for path in (
        "/backoffice/review/",
        "/backoffice/rentals/",
        "/backoffice/fleet/",
        "/backoffice/nodes/",
        "/backoffice/support/",
        "/backoffice/outbox/",
        "/backoffice/orders/order/",
    ):
        assert path in everything, path


def test_the_dashboard_speaks_spanish_by_default_for_spanish_browsers(seeded):
    client = superuser_client()
    html = client.get("/backoffice/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "Lo que te necesita ahora" in html
    assert "Ventas por día" in html
    # Coordinates never take the Spanish decimal comma.
    import re

    for points in re.findall(r'points="([^"]+)"', html):
        assert re.fullmatch(r"[0-9. ,]+", points) and ".," not in points
    assert not re.search(r'\b[xy]="\d+,\d', html)


def test_a_watcher_down_shows_at_the_top(settings):
    from kernodeck.payments.models import ChainState

    clock.freeze(NOW)
    settings.KERNODECK_TRON_API_URL = "http://127.0.0.1:9/"
    ChainState.objects.create(
        network="tron", last_success_at=NOW - timedelta(hours=1), last_error_at=NOW
    )

    response = superuser_client().get("/backoffice/")

    assert figures(response)["watchers-down"] == "1"
    assert "tron" in response.content.decode().split('data-figure="watchers-down"')[1][:400]
