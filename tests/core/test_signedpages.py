"""Signed-in pages kept while the database is unchanged (core/signedpages.py): a kept copy
is the rendered page but for the CSRF token, which is the request's own and accepted; any
committed write, another session, the clock past the bound, a waiting message, a page that
shows an access secret or a revoked permission gets the view again; never inside a
transaction, never on SQLite."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.middleware.csrf import _unmask_cipher_token
from django.test import Client
from django.urls import reverse

from kernodeck.core import clock, signedpages
from kernodeck.provisioning.models import Node
from tests.budgets import data, operations_data
from tests.constraint_races import needs_postgres
from tests.factories import make_offer, make_operator, make_ssh_node
from tests.support.helpers import active_rental

T0 = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}
TOKEN = re.compile(r"(?<=[\"'])[A-Za-z0-9]{64}(?=[\"'])")

committed = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def kept_pages(settings):
    settings.KERNODECK_SIGNED_PAGE_SECONDS = 5
    signedpages.clear()
    clock.freeze(T0)
    yield
    clock.freeze(None)
    signedpages.clear()


def a_node():
    return make_ssh_node(
        name="gpu-a", offer=make_offer(units_total=0), gpu_count=8, host="10.9.0.9"
    )


def node_page(operator=None, **extra):
    """(a signed-in operator's client, the URL of a node's page): a page with forms."""
    url = reverse("backoffice_nodes:detail", args=[a_node().name])
    return signed_in(operator or make_operator(), **extra), url


def served(response) -> bool:
    """Whether a kept copy answered (the view did not run)."""
    return getattr(response.wsgi_request, "signed_page_copy", False)


# Transaction ids are the PostgreSQL server's, not one database's: a write anywhere on the
# server (the suite's other workers, in their own databases) moves the snapshot and makes
# every copy stale. A copy is certainly not served after a change here; that one is served
# when nothing changed is shown by asking again until a request falls between two writes.
ATTEMPTS = 100


def until_served(get):
    """(the rendered answer, the next answer, a kept copy of it), asking again until a
    kept copy answers; fails if none did in ATTEMPTS."""
    before = get()
    for _attempt in range(ATTEMPTS):
        after = get()
        if served(after):
            return before, after
        before = after
    pytest.fail(f"no kept copy answered in {ATTEMPTS} requests")


def without_tokens(response) -> str:
    return TOKEN.sub("TOKEN", response.content.decode())


def tokens(response) -> set[str]:
    return set(TOKEN.findall(response.content.decode()))


def signed_in(user, **extra) -> Client:
    client = Client(**extra)
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "page",
    ["desk", "fleet", "nodes", "node", "inbox", "review", "outbox", "audit", "balance", "order"],
)
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_every_kept_page_is_the_rendered_page_but_the_token(page):
    needs_postgres()
    operations = operations_data.build(10)
    dataset = data.build(10)
    paths = {
        "desk": "/backoffice/rentals/",
        "fleet": "/backoffice/fleet/",
        "nodes": "/backoffice/nodes/",
        "node": f"/backoffice/nodes/{operations.node.name}/",
        "inbox": "/backoffice/support/",
        "review": "/backoffice/review/",
        "outbox": "/backoffice/outbox/",
        "audit": "/backoffice/core/auditevent/",
        "balance": "/balance/",
        "order": reverse("orders:detail", args=[dataset.order.reference]),
    }
    who = dataset.customer if page in ("balance", "order") else dataset.operator
    client = signed_in(who)
    first, second = until_served(lambda: client.get(paths[page], **EN))
    assert first.status_code == second.status_code == 200
    assert not served(first)
    assert without_tokens(first) == without_tokens(second)
    assert first.headers["Content-Type"] == second.headers["Content-Type"]
    if tokens(first):
        assert tokens(first).isdisjoint(tokens(second))  # a new mask for every answer


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_committed_write_renders_the_page_again():
    needs_postgres()
    client, url = node_page()
    until_served(lambda: client.get(url, **EN))

    Node.objects.filter(name="gpu-a").update(agent_dir="/srv/another-dir")  # committed

    again = client.get(url, **EN)
    assert not served(again)
    assert "/srv/another-dir" in again.content.decode()
    _rendered, kept = until_served(lambda: client.get(url, **EN))
    assert "/srv/another-dir" in kept.content.decode()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_token_of_a_kept_copy_is_the_requests_own_and_accepted():
    needs_postgres()
    client, url = node_page(enforce_csrf_checks=True)
    _rendered, second = until_served(lambda: client.get(url, **EN))
    (token,) = tokens(second)
    secret = client.cookies["csrftoken"].value
    assert _unmask_cipher_token(token) == secret
    # A refused setting re-renders the form (200); a refused token would be a 403.
    posted = client.post(
        url, {"action": "settings", "retention_hours": "-1", "csrfmiddlewaretoken": token}, **EN
    )
    assert posted.status_code == 200
    assert posted.context["settings_form"].errors


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_copies_are_never_shared_between_sessions_or_accounts():
    needs_postgres()
    operator = make_operator()
    first, url = node_page(operator)
    until_served(lambda: first.get(url, **EN))
    # The same account in another browser, and another operator: each renders its own.
    assert not served(signed_in(operator).get(url, **EN))
    assert not served(signed_in(make_operator()).get(url, **EN))
    # Another language is another copy.
    assert not served(first.get(url, HTTP_ACCEPT_LANGUAGE="es"))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_copy_is_used_for_at_most_the_setting_by_the_project_clock(settings):
    needs_postgres()
    client, url = node_page()
    # A copy 4.9 s old is served (asked again from a new copy while another worker's write
    # made it stale).
    for attempt in range(ATTEMPTS):
        built = T0 + timedelta(seconds=10 * attempt)
        clock.freeze(built)
        client.get(url, **EN)
        clock.freeze(built + timedelta(seconds=4.9))
        if served(client.get(url, **EN)):
            break
    else:
        pytest.fail("no copy 4.9 s old answered")
    clock.freeze(built + timedelta(seconds=5))
    assert not served(client.get(url, **EN))  # rendered again at 5 s
    clock.freeze(built + timedelta(seconds=4))
    assert not served(client.get(url, **EN))  # a clock set back: stale
    settings.KERNODECK_SIGNED_PAGE_SECONDS = 0
    client.get(url, **EN)
    assert not served(client.get(url, **EN))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_waiting_messages_and_posts_get_the_view():
    needs_postgres()
    client, url = node_page()
    until_served(lambda: client.get(url, **EN))
    client.cookies["messages"] = "anything"
    assert not served(client.get(url, **EN))
    del client.cookies["messages"]
    posted = client.post(url, {"action": "settings", "retention_hours": "-1"}, **EN)
    assert posted.status_code == 200 and not served(posted)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_revoked_permission_refuses_the_page_a_copy_was_kept_of():
    needs_postgres()
    operator = make_operator()
    client, url = node_page(operator)
    until_served(lambda: client.get(url, **EN))
    operator.user_permissions.remove(
        Permission.objects.get(content_type__app_label="provisioning", codename="operate_rentals")
    )
    assert client.get(url, **EN).status_code == 403


@pytest.mark.django_db
def test_nothing_is_kept_inside_a_transaction_nor_on_sqlite():
    # The test's own transaction: its writes would not move the snapshot.
    client, url = node_page()
    client.get(url, **EN)
    assert not served(client.get(url, **EN))
    assert signedpages.database_snapshot() is None
    assert not signedpages._kept.copies


@pytest.mark.django_db(transaction=True)
def test_sqlite_keeps_nothing():
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite case")
    client, url = node_page()
    client.get(url, **EN)
    assert not served(client.get(url, **EN))
    assert signedpages.database_snapshot() is None


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_an_order_file_that_shows_its_access_is_never_kept():
    needs_postgres()
    order = active_rental(token="a-jupyter-token")
    client = signed_in(order.owner)
    url = reverse("orders:detail", args=[order.reference])
    first = client.get(url, **EN)
    assert 'id="access"' in first.content.decode()
    assert not served(client.get(url, **EN))
    assert not signedpages._kept.copies
