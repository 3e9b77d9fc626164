"""Who sees access details, the operators' API and its refusals, the SSH-keys API, the
calendar file and `kernodeck issue_token`."""

import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from kernodeck.accounts import services as account_services
from kernodeck.core import clock
from kernodeck.core.models import AuditEvent
from kernodeck.orders.models import Order, RentalState
from kernodeck.provisioning import services
from kernodeck.provisioning.models import Delivery, Node
from tests.factories import (
    api_post,
    make_offer,
    make_operator,
    make_settled_order,
    make_ssh_key,
    make_user,
)

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def active_order(owner=None, *, token="tok-secret-91"):
    clock.freeze(T0)
    order = make_settled_order(owner=owner, offer=make_offer(units_total=2), days=3)
    make_ssh_key(order.owner)
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)
    return services.rental_deliver(
        order=order,
        host="gpu7.example.org",
        port=2201,
        user="kd-7q4m",
        url="http://127.0.0.1:8888/lab",
        token=token,
        actor=operator,
    )


def bearer(client, user):
    _token, raw = account_services.api_token_create(user=user, name="t")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    return client


# -- access details: the permission matrix -----------------------------------------------


def test_the_owner_sees_access_on_the_order_file_and_in_the_api(client):
    order = active_order()
    client.force_login(order.owner)

    page = client.get(f"/orders/{order.reference}/").content.decode()
    assert "ssh -p 2201 kd-7q4m@gpu7.example.org" in page
    assert "ssh -N -L 8888:127.0.0.1:8888 -p 2201 kd-7q4m@gpu7.example.org" in page
    assert "tok-secret-91" in page
    assert 'id="countdown"' in page

    body = bearer(client, order.owner).get(f"/api/v1/orders/{order.reference}").json()
    assert body["access"] == {
        "host": "gpu7.example.org",
        "port": 2201,
        "user": "kd-7q4m",
        "ssh_command": "ssh -p 2201 kd-7q4m@gpu7.example.org",
        "nodes": [
            {
                "host": "gpu7.example.org",
                "port": 2201,
                "user": "kd-7q4m",
                "gpus": [0],
                "ssh_command": "ssh -p 2201 kd-7q4m@gpu7.example.org",
            }
        ],
        "url": "http://127.0.0.1:8888/lab",
        "token": "tok-secret-91",
        "tunnel_command": "ssh -N -L 8888:127.0.0.1:8888 -p 2201 kd-7q4m@gpu7.example.org",
    }
    assert body["starts_at"].startswith("2026-12-01T12:00:00")
    assert body["ends_at"].startswith("2026-12-04T12:00:00")


def test_another_customer_gets_404_everywhere(client):
    order = active_order()
    stranger = make_user()
    client.force_login(stranger)
    assert client.get(f"/orders/{order.reference}/").status_code == 404
    assert client.get(f"/rentals/{order.reference}/calendar.ics").status_code == 404
    assert bearer(client, stranger).get(f"/api/v1/orders/{order.reference}").status_code == 404


def test_staff_without_the_access_permission_get_403_and_nothing_is_recorded(client):
    order = active_order()
    operator = make_operator(perms=("operate_rentals",))
    client.force_login(operator)
    views_before = AuditEvent.objects.filter(action="provisioning.access_viewed").count()

    assert client.get(f"/backoffice/rentals/{order.reference}/access/").status_code == 403
    api = bearer(client, operator).get(f"/api/v1/ops/rentals/{order.reference}/access")
    assert api.status_code == 403
    assert AuditEvent.objects.filter(action="provisioning.access_viewed").count() == views_before
    # Staff see no customer's order file either: that is the owner's page.
    assert client.get(f"/orders/{order.reference}/").status_code == 404


def test_staff_with_the_access_permission_see_it_and_each_view_is_audited(client):
    order = active_order()
    operator = make_operator(perms=("operate_rentals", "view_access"))
    client.force_login(operator)

    page = client.get(f"/backoffice/rentals/{order.reference}/access/")
    assert page.status_code == 200
    assert "tok-secret-91" in page.content.decode()
    api = bearer(client, operator).get(f"/api/v1/ops/rentals/{order.reference}/access")
    assert api.status_code == 200
    assert api.json()["token"] == "tok-secret-91"

    views = AuditEvent.objects.filter(action="provisioning.access_viewed").order_by("id")
    assert [(v.actor_id, v.data) for v in views] == [
        (operator.pk, {"order": order.reference}),
        (operator.pk, {"order": order.reference}),
    ]


def test_access_is_gone_once_the_rental_ends(client):
    order = active_order()
    services.rental_end(order=order, reason="customer asked", actor=make_operator())
    body = bearer(client, order.owner).get(f"/api/v1/orders/{order.reference}").json()
    assert body["access"] is None
    assert body["rental_state"] == "ended"
    assert Delivery.objects.get(order=order).secret_ciphertext == ""


# -- the desk ------------------------------------------------------------------------------


def test_the_desk_needs_the_permission(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    assert client.get("/backoffice/rentals/").status_code == 302  # sign in first
    client.force_login(make_user())
    assert client.get("/backoffice/rentals/").status_code == 403  # customers: not staff
    client.force_login(make_user(staff=True))
    assert client.get("/backoffice/rentals/").status_code == 403
    assert client.get("/backoffice/fleet/").status_code == 403
    client.force_login(make_operator(perms=("operate_rentals",)))
    page = client.get("/backoffice/rentals/")
    assert page.status_code == 200
    assert order.reference in page.content.decode()


def test_desk_actions_need_confirmation_and_reason(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    client.force_login(make_operator())
    url = f"/backoffice/rentals/{order.reference}/fail/"

    refused = client.post(url, {"reason": "node on fire"})  # no confirmation box
    assert refused.status_code == 422
    refused = client.post(url, {"reason": "", "confirm": "on"})
    assert refused.status_code == 422
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.QUEUED

    done = client.post(url, {"reason": "node on fire", "confirm": "on"})
    assert done.status_code == 302
    order.refresh_from_db()
    assert (order.rental_state, order.rental_reason) == ("provisioning_failed", "node on fire")


def test_deliver_form_refuses_bad_input_and_changes_nothing(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    make_ssh_key(order.owner)
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)
    client.force_login(operator)
    url = f"/backoffice/rentals/{order.reference}/deliver/"
    base = {"host": "gpu.example.org", "port": "22", "user": "kd-a", "confirm": "on"}

    for bad in (
        {"port": "٣"},
        {"port": "³"},
        {"port": "70000"},
        {"host": "a\x00b"},
        {"user": "root; rm"},
        {"url": "javascript:alert(1)"},
    ):
        response = client.post(url, {**base, **bad})
        # A NUL byte is refused at the edge (400) before the form sees it; the rest by the form.
        assert response.status_code == (400 if any("\x00" in v for v in bad.values()) else 422), (
            bad
        )
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.PREPARING
    assert not Delivery.objects.exists()

    assert client.post(url, base).status_code == 302
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.ACTIVE


# -- the operators' API --------------------------------------------------------------------


def test_the_ops_api_refuses_customer_tokens_and_staff_without_the_permission(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    for user in (order.owner, make_user(), make_user(staff=True)):
        bearer(client, user)
        assert client.get("/api/v1/ops/rentals").status_code == 403
        assert client.get("/api/v1/ops/nodes").status_code == 403
        response = api_post(client, f"/ops/rentals/{order.reference}/fail", {"reason": "x"})
        assert response.status_code == 403
        assert response.json()["detail"].startswith("This needs an operator's token")
    assert Order.objects.get(pk=order.pk).rental_state == RentalState.QUEUED
    client.defaults.pop("HTTP_AUTHORIZATION")
    assert client.get("/api/v1/ops/rentals").status_code == 401


def test_an_operator_drives_a_rental_through_the_api(client):
    clock.freeze(T0)
    offer = make_offer(units_total=2)
    order = make_settled_order(offer=offer, units=2)
    make_ssh_key(order.owner)
    bearer(client, make_operator())

    listed = client.get("/api/v1/ops/rentals?state=queued").json()
    assert [(r["reference"], r["gpus"], r["allocation"]) for r in listed] == [
        (order.reference, 2, [{"node": f"{offer.slug}-01", "slots": [0, 1]}])
    ]
    assert api_post(client, f"/ops/rentals/{order.reference}/prepare").json()["rental_state"] == (
        "preparing"
    )
    bad = api_post(
        client, f"/ops/rentals/{order.reference}/deliver", {"host": "h", "port": "٣", "user": "u"}
    )
    assert bad.status_code == 422
    delivered = api_post(
        client,
        f"/ops/rentals/{order.reference}/deliver",
        {"host": "gpu1.example.org", "port": 22, "user": "kd-x"},
    )
    assert delivered.status_code == 200
    assert delivered.json()["ends_at"].startswith("2026-12-08T12:00:00")
    refused = api_post(client, f"/ops/rentals/{order.reference}/suspend", {"reason": ""})
    assert refused.status_code == 422
    suspended = api_post(client, f"/ops/rentals/{order.reference}/suspend", {"reason": "abuse"})
    assert suspended.json()["rental_state"] == "suspended"
    conflict = api_post(client, f"/ops/rentals/{order.reference}/prepare")
    assert conflict.status_code == 409
    assert conflict.json()["detail"] == (
        f"Rental {order.reference} is suspended; it cannot become preparing."
    )
    assert api_post(client, "/ops/rentals/KD-NOPE-NOPE/prepare").status_code == 404


def test_operators_list_and_add_nodes_through_the_api(client):
    offer = make_offer(units_total=1, gpus_per_unit=2)
    bearer(client, make_operator())

    created = api_post(
        client, "/ops/nodes", {"name": "b200-x", "offer": offer.slug, "gpu_count": 4, "host": "b"}
    )
    assert created.status_code == 201
    assert created.json()["gpu_count"] == 4
    odd = api_post(
        client, "/ops/nodes", {"name": "b200-y", "offer": offer.slug, "gpu_count": 3, "host": "b"}
    )
    assert odd.status_code == 422
    names = [n["name"] for n in client.get("/api/v1/ops/nodes").json()]
    assert names == sorted([f"{offer.slug}-01", "b200-x"])
    assert client.get("/api/v1/offers").json()[0]["units_available"] == 3
    state = api_post(client, "/ops/nodes/b200-x/state", {"state": "maintenance", "reason": "fan"})
    assert state.json()["state"] == "maintenance"
    assert client.get("/api/v1/offers").json()[0]["units_available"] == 1
    assert not Node.objects.filter(name="b200-y").exists()


# -- customers' SSH keys, calendar, issue_token -------------------------------------------


def test_customers_manage_ssh_keys_through_the_api(api):
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from tests.accounts.test_ssh_keys import openssh_public

    key = openssh_public(ed25519.Ed25519PrivateKey.generate())
    created = api_post(api, "/ssh-keys", {"public_key": key, "name": "laptop"})
    assert created.status_code == 201
    listed = api.get("/api/v1/ssh-keys").json()
    assert [(k["name"], k["fingerprint"]) for k in listed] == [
        ("laptop", created.json()["fingerprint"])
    ]
    assert api_post(api, "/ssh-keys", {"public_key": "ssh-ed25519 \x00"}).status_code == 422
    assert api_post(api, "/ssh-keys", {"public_key": "x" * 100_000}).status_code == 422
    assert api.delete(f"/api/v1/ssh-keys/{created.json()['id']}").status_code == 204
    assert api.get("/api/v1/ssh-keys").json() == []
    assert api.delete(f"/api/v1/ssh-keys/{created.json()['id']}").status_code == 404


def test_the_calendar_file_spans_the_rental(client):
    order = active_order()
    client.force_login(order.owner)
    response = client.get(f"/rentals/{order.reference}/calendar.ics")
    assert response["Content-Type"] == "text/calendar; charset=utf-8"
    body = response.content.decode()
    assert "DTSTART:20261201T120000Z\r\n" in body
    assert "DTEND:20261204T120000Z\r\n" in body
    assert "TRIGGER;RELATED=END:-PT24H" in body


def test_without_dates_the_calendar_says_to_ask_support(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    client.force_login(order.owner)
    response = client.get(f"/rentals/{order.reference}/calendar.ics", follow=True)
    assert "has no dates yet" in response.content.decode()
    page = client.get(f"/orders/{order.reference}/").content.decode()
    help_url = f"/support/new/?kind=other&amp;order={order.reference}&amp;topic=dates"
    assert f'not set yet — <a href="{help_url}">ask support</a> if you need it' in page
    assert 'id="needs-ssh-key"' in page


def test_issue_token_prints_a_working_token(client):
    operator = make_operator()
    out = io.StringIO()
    call_command("issue_token", operator.email.upper(), "--name", "ops script", stdout=out)
    raw = out.getvalue().strip()
    assert raw.startswith("kd_")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}"
    assert client.get("/api/v1/ops/rentals").status_code == 200


def test_my_orders_shows_the_end_date_of_active_rentals(client):
    order = active_order()
    client.force_login(order.owner)
    page = client.get("/orders/").content.decode()
    assert "ends 2026-12-04 12:00 UTC" in page
    clock.freeze(T0 + timedelta(days=1))
    assert "2 d 0 h 0 min" in client.get(f"/orders/{order.reference}/").content.decode()


def test_the_ops_api_answers_nonsense_with_4xx_and_changes_nothing(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    make_ssh_key(order.owner)
    bearer(client, make_operator())
    api_post(client, f"/ops/rentals/{order.reference}/prepare")
    deliver = f"/ops/rentals/{order.reference}/deliver"
    nonsense = [
        {"host": "h\x00x", "port": 22, "user": "kd-a"},
        {"host": "h", "port": "³", "user": "kd-a"},
        {"host": "h", "port": 10**30, "user": "kd-a"},
        {"host": "h", "port": 22, "user": "kd-a", "token": "t" * 600},
        {"host": "h", "port": 22, "user": "a" * 10_000},
        {"host": ["h"], "port": 22, "user": "kd-a"},
    ]
    for body in nonsense:
        response = api_post(client, deliver, body)
        assert 400 <= response.status_code < 500, body
        assert "detail" in response.json()
    odd = client.post(f"/api/v1{deliver}", b"\xff\xfe\x00", content_type="application/json")
    assert 400 <= odd.status_code < 500
    assert api_post(client, "/ops/rentals/%00/fail", {"reason": "x"}).status_code == 400
    assert (
        api_post(client, "/ops/nodes/%00/state", {"state": "retired", "reason": "x"}).status_code
        == 400
    )
    order.refresh_from_db()
    assert order.rental_state == RentalState.PREPARING
    assert not Delivery.objects.exists()


def test_the_deliver_form_shows_the_keys_to_install(client):
    order = make_settled_order(offer=make_offer(units_total=1))
    key = make_ssh_key(order.owner)
    operator = make_operator()
    services.rental_prepare(order=order, actor=operator)
    client.force_login(operator)
    page = client.get(f"/backoffice/rentals/{order.reference}/deliver/").content.decode()
    assert key.public_key in page
    assert key.fingerprint in page
