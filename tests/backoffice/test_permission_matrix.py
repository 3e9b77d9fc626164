"""Permission matrix over every back-office URL and action, generated from the URLconf.

A URL added under /backoffice/ is covered without touching this file: a custom view must
declare its permissions (`permission_required`), an admin page is checked against the
model permission Django's admin names it by. Without the permission: 403 (for a signed-in
customer, for staff holding nothing, for staff holding only unrelated permissions); with
it: 200 or a redirect.
"""

from decimal import Decimal

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from django.contrib import admin
from django.contrib.admin import AdminSite
from django.contrib.auth.models import Group, Permission
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import translation

from kernodeck.accounts import services as account_services
from kernodeck.core.models import AuditEvent
from kernodeck.ledger.models import LedgerEntry
from kernodeck.notifications.models import OutboxMessage
from kernodeck.payments import services as payment_services
from kernodeck.payments import watching
from kernodeck.payments.chains.base import ObservedTransfer
from kernodeck.payments.models import (
    ChainState,
    IntentStatus,
    PaymentIntent,
    Resolution,
    Transfer,
)
from kernodeck.provisioning import services as provisioning_services
from kernodeck.provisioning.models import Node
from kernodeck.settlement import topups as settlement_topups
from tests.accounts.test_ssh_keys import openssh_public
from tests.factories import make_offer, make_order, make_settled_order, make_user
from tests.ledger.helpers import funded_account, pay_topup

pytestmark = pytest.mark.django_db

ADMIN_MODEL_ACTIONS = {
    "changelist": "view",
    "change": "view",
    "history": "view",
    "add": "add",
    "delete": "delete",
}


def _walk(patterns, prefix="", namespace=""):
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _walk(entry.url_patterns, route, inner)
        elif isinstance(entry, URLPattern) and entry.name:
            yield route.lstrip("^"), f"{namespace}{entry.name}", entry


def backoffice_urls():
    """(URL name, view) for every named route under backoffice/."""
    return sorted(
        {
            name: pattern.callback
            for route, name, pattern in _walk(get_resolver().url_patterns)
            if route.startswith("backoffice/")
        }.items()
    )


@pytest.fixture
def world(configured, fresh_rates):
    """One object of every kind the back-office shows, and an exception case to decide."""
    staff = make_user(staff=True)
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "210.00", 30: "800.00"}))
    intent = payment_services.payment_intent_create_for_order(
        order=order, method_code="usdt-tron", actor=order.owner
    )
    pay_topup(intent, amount_base=300_000_000)  # overpaid: waits for a decision
    stray = watching.transfer_record(
        ObservedTransfer(
            network="tron",
            txid="77" * 32,
            index=0,
            address="TNotOurs",
            asset="TRX",
            amount_base=1,
            confirmations=1,
        ),
        intent=None,
    )
    funded_account(order.owner, "10.00", staff)
    account_services.api_token_create(user=order.owner, name="laptop")
    account_services.ssh_key_add(
        user=order.owner, public_key=openssh_public(ed25519.Ed25519PrivateKey.generate())
    )
    ChainState.objects.get_or_create(network="tron")
    settlement_topups.topup_create(
        account=order.owner, amount_usd="100", method_code="btc-bitcoin"
    )
    Group.objects.create(name="Someone else's group")
    intent.refresh_from_db()
    assert intent.status == IntentStatus.OVERPAID
    # A rental with its allocation and an access delivery, for the desk and fleet pages.
    rental = make_settled_order(owner=order.owner)
    provisioning_services.rental_allocate(order=rental)
    provisioning_services.rental_prepare(order=rental, actor=staff)
    provisioning_services.rental_deliver(
        order=rental, host="gpu-01.example.org", port=22, user="kd-rental", actor=staff
    )
    node = Node.objects.order_by("pk").first()
    return {"intent": intent, "transfer": stray, "order": order, "rental": rental, "node": node}


def _object_id(model):
    obj = model.objects.order_by("pk").first()
    assert obj is not None, f"add a {model.__name__} to the matrix's fixture"
    return str(obj.pk)


def _access_request(world):
    """A signed-out "I can't sign in" request (made once per test)."""
    from kernodeck.support import services as support_services

    if "access_request" not in world:
        world["access_request"] = support_services.access_request_create(
            email=world["order"].owner.email,
            name="Ada",
            references=world["order"].reference,
            body="My password no longer works.",
            ip_address="10.0.0.9",
            language="en",
        )
    return world["access_request"]


def _support_ticket(world):
    """A customer's problem ticket with one attachment (made once per test)."""
    from kernodeck.support import services as support_services

    if "ticket" not in world:
        world["ticket"] = support_services.ticket_create(
            owner=world["order"].owner,
            kind="problem",
            subject="Crash",
            body="It fails.",
            order=world["order"].reference,
            attachments=[support_services.Upload(name="run.log", data=b"step 1\n")],
        )
    return world["ticket"]


def _alert(world):
    """An open alert on the fixture's node (made once per test)."""
    from kernodeck.provisioning import alerts

    if "alert" not in world:
        world["alert"], _created = alerts.alert_raise(
            kind="node_maintenance_live",
            key=f"node_maintenance_live:{world['node'].name}",
            message="The node is in maintenance with live rentals.",
            action="Mend the node.",
            node=world["node"],
        )
    return world["alert"]


def _target(name, view, world):
    """The concrete URL for a route name, and the permissions it needs (None: any)."""
    from django.contrib import admin

    if not name.startswith("admin:"):
        perms = getattr(view, "backoffice_permissions", None)
        assert perms, f"{name} must be protected with accounts.permissions.permission_required"
        url = {
            "backoffice:review_queue": lambda: reverse(name),
            "backoffice:intent_case": lambda: reverse(name, args=[world["intent"].pk]),
            "backoffice:transfer_case": lambda: reverse(name, args=[world["transfer"].pk]),
            "notifications:outbox": lambda: reverse(name),
            "desk:rentals": lambda: reverse(name),
            "desk:fleet": lambda: reverse(name),
            "desk:rental": lambda: reverse(name, args=[world["rental"].reference]),
            "desk:deliver": lambda: reverse(name, args=[world["rental"].reference]),
            "desk:access": lambda: reverse(name, args=[world["rental"].reference]),
            "desk:action": lambda: reverse(name, args=[world["rental"].reference, "suspend"]),
            "desk:node_state": lambda: reverse(name, args=[world["node"].name]),
            "desk:alert_ack": lambda: reverse(name, args=[_alert(world).pk]),
            "backoffice_nodes:list": lambda: reverse(name),
            "backoffice_nodes:detail": lambda: reverse(name, args=[world["node"].name]),
            "notifications:outbox_retry": lambda: reverse(name, args=[_object_id(OutboxMessage)]),
            "support_staff:inbox": lambda: reverse(name),
            "support_staff:ticket": lambda: reverse(name, args=[_support_ticket(world).pk]),
            "support_staff:access": lambda: reverse(name, args=[_access_request(world).pk]),
            "support_staff:canned": lambda: reverse(
                name, args=[_support_ticket(world).pk, "export_advice"]
            ),
            "support_staff:attachment": lambda: reverse(
                name,
                args=[
                    _support_ticket(world).pk,
                    _support_ticket(world).messages.get().attachments.get().pk,
                ],
            ),
        }.get(name)
        assert url, f"add {name} and its object to the matrix's fixture"
        return url(), perms
    # The Django admin's pages: model pages need the model's permission.
    for model in admin.site._registry:
        opts = model._meta
        base = f"admin:{opts.app_label}_{opts.model_name}_"
        if name.startswith(base):
            action = name[len(base) :]
            perms = (f"{opts.app_label}.{ADMIN_MODEL_ACTIONS[action]}_{opts.model_name}",)
            if action == "add":
                # Django's user admin adds in two steps, the second being a change.
                perms += (f"{opts.app_label}.change_{opts.model_name}",)
            if f"{opts.app_label}.{opts.model_name}" == "payments.rate" and action == "add":
                perms = ("payments.set_rate",)
            args = [_object_id(model)] if action in {"change", "history", "delete"} else []
            return reverse(name, args=args), perms
    if name == "admin:auth_user_password_change":
        return reverse(name, args=[world["order"].owner.pk]), ("accounts.change_user",)
    if name == "admin:app_list":
        return reverse(name, args=["payments"]), ("payments.view_transfer",)
    if name == "admin:view_on_site":
        return None, None
    if name == "admin:login":
        return reverse(name), None
    return reverse(name), ()


def _client_with(*codenames):
    user = make_user(staff=True)
    for perm in codenames:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(user)
    return client


UNRELATED = "accounts.view_sshkey"


def test_every_backoffice_url_refuses_accounts_without_its_permission(world):
    customer = Client()
    customer.force_login(world["order"].owner)
    memo = {}

    def client_with(*codenames):
        if codenames not in memo:
            memo[codenames] = _client_with(*codenames)
        return memo[codenames]

    bare_staff = _client_with()
    superuser = Client()
    superuser.force_login(make_user(staff=True, is_superuser=True))
    checked = 0
    for name, view in backoffice_urls():
        url, perms = _target(name, view, world)
        if url is None:
            continue
        checked += 1
        assert customer.get(url).status_code == 403, name
        assert bare_staff.get(url).status_code == 403, name
        if perms is None:
            continue
        if perms:
            holder = client_with(*perms)
            other = UNRELATED if UNRELATED not in perms else "core.view_auditevent"
            assert client_with(other).get(url).status_code == 403, name
        else:
            # Site-wide pages (index, password change…): any back-office permission.
            holder = client_with(UNRELATED)
        offered = superuser.get(url).status_code
        if offered in {200, 302}:
            assert holder.get(url).status_code in {200, 302}, name
        else:
            # Not offered to anybody (adding to a read-only record, autocomplete without
            # its parameters, GET on logout): the permission changes nothing.
            assert holder.get(url).status_code == offered, name
    assert checked > 40


def test_a_signed_in_customer_gets_a_403_page_not_a_redirect_loop(world):
    customer = Client()
    customer.force_login(world["order"].owner)

    for path in ("/backoffice/", "/backoffice/login/?next=/backoffice/", "/backoffice/review/"):
        response = customer.get(path)
        assert response.status_code == 403, path
        assert "You are not allowed to open this page" in response.content.decode()
    assert Client().get("/backoffice/").status_code == 302


def _post_action(client, url, action):
    if action.startswith("decision:"):
        data = {"form": "decision", "action": action.split(":")[1], "reason": "checked"}
    elif action == "reversal":
        data = {"form": "reversal", "decision": "loss_accepted", "reason": "checked"}
    elif action == "record":
        data = {"form": "record", "txid": "ab12" * 16, "amount": "1", "reason": "seen"}
    else:
        data = {"note": "looked at it"}
    return client.post(url, data)


def test_every_backoffice_action_needs_its_permission_and_changes_nothing_without_it(world):
    intent = world["intent"]
    cases = [
        (reverse("backoffice:intent_case", args=[intent.pk]), view_actions)
        for view_actions in [_actions("backoffice:intent_case")]
    ] + [
        (
            reverse("backoffice:transfer_case", args=[world["transfer"].pk]),
            _actions("backoffice:transfer_case"),
        )
    ]
    for url, actions in cases:
        assert actions, url
        for action, perms in actions.items():
            # Holding the page's permission only is not enough for a stronger action.
            for missing in perms:
                partial = _client_with(*[p for p in perms if p != missing] or [UNRELATED])
                response = _post_action(partial, url, action)
                assert response.status_code == 403, (action, missing)
            intent.refresh_from_db()
            assert intent.resolution == ""
            assert LedgerEntry.objects.filter(account=intent.owner).count() == 1
            assert Transfer.objects.count() == 2

    # The right permissions do the deed: the credit decision mints balance once.
    holder = _client_with("payments.review_payment", "ledger.adjust_balance")
    response = _post_action(
        holder, reverse("backoffice:intent_case", args=[intent.pk]), "decision:credit"
    )
    assert response.status_code == 302
    intent.refresh_from_db()
    assert intent.resolution == Resolution.CREDITED
    assert LedgerEntry.objects.filter(account=intent.owner).count() == 2
    assert AuditEvent.objects.filter(actor__isnull=False).exists()
    assert PaymentIntent.objects.count() == 2
    assert Decimal("0") < sum(e.amount_usd for e in LedgerEntry.objects.all())


def _actions(name):
    return dict(backoffice_urls())[name].backoffice_actions


ACCESS_MATRIX = [
    ((), False),
    (("provisioning.operate_rentals",), False),
    (("provisioning.view_access",), False),
    (("provisioning.operate_rentals", "provisioning.view_access"), True),
]


@pytest.mark.parametrize(("perms", "allowed"), ACCESS_MATRIX, ids=lambda v: str(v))
def test_access_details_need_operate_rentals_and_view_access_on_desk_and_api(perms, allowed):
    """What the README's permission table and the ops API's docstring say: reading a
    customer's access needs both permissions, on the desk and through the API alike."""
    from tests.factories import make_ssh_key

    staff = make_user(staff=True)
    order = make_settled_order()
    make_ssh_key(order.owner)
    provisioning_services.rental_allocate(order=order)
    provisioning_services.rental_prepare(order=order, actor=staff)
    provisioning_services.rental_deliver(
        order=order,
        host="gpu-01.example.org",
        port=22,
        user="kd-rental",
        url="https://127.0.0.1:8888/lab",
        token="nb-secret-token-1",
        actor=staff,
    )
    desk = _client_with(*perms)
    user = desk.session.get("_auth_user_id")
    _token, raw = account_services.api_token_create(
        user=type(order.owner).objects.get(pk=user), name="ops"
    )
    api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    reads_before = AuditEvent.objects.filter(action__contains="access").count()

    page = desk.get(reverse("desk:access", args=[order.reference]))
    answer = api.get(f"/api/v1/ops/rentals/{order.reference}/access")
    rental_page = desk.get(reverse("desk:rental", args=[order.reference]))

    if allowed:
        assert page.status_code == 200
        assert answer.status_code == 200
        assert answer.json()["token"] == "nb-secret-token-1"
        assert reverse("desk:access", args=[order.reference]) in rental_page.content.decode()
        assert AuditEvent.objects.filter(action__contains="access").count() == reads_before + 2
    else:
        assert page.status_code == 403
        assert answer.status_code == 403
        assert "nb-secret-token-1" not in page.content.decode()
        assert reverse("desk:access", args=[order.reference]) not in (
            rental_page.content.decode() if rental_page.status_code == 200 else ""
        )
        assert AuditEvent.objects.filter(action__contains="access").count() == reads_before


@pytest.mark.django_db
def test_the_header_links_the_review_queue_only_to_reviewers():
    queue = reverse("backoffice:review_queue")
    without = _client_with(UNRELATED).get(reverse("faq")).content.decode()
    reviewer = _client_with("payments.review_payment").get(reverse("faq")).content.decode()

    assert f'href="{queue}"' not in without
    assert f'href="{queue}"' in reviewer


def _apps_shown(apps) -> list:
    return [
        (
            str(app["name"]),
            app["app_url"],
            [(str(m["name"]), m["admin_url"], m["add_url"], m["perms"]) for m in app["models"]],
        )
        for app in apps
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "es"])
def test_the_kept_app_list_is_the_admins_for_each_account_and_its_permissions(language):
    """The site keeps each list of apps and models it made (sites.py `_apps`): every
    account gets the one Django's admin makes for its permissions, in its language, also
    after a permission is given."""

    def request_of(user):
        request = RequestFactory().get("/backoffice/")
        request.user = user
        return request

    auditor = make_user(staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    reviewer = make_user(staff=True)
    reviewer.user_permissions.add(Permission.objects.get(codename="review_payment"))
    boss = make_user(staff=True, is_superuser=True)
    with translation.override(language):
        for user in (auditor, reviewer, boss, auditor):
            for _ in range(2):
                kept = admin.site.get_app_list(request_of(user))
                made = AdminSite.get_app_list(admin.site, request_of(user))
                assert _apps_shown(kept) == _apps_shown(made)
        before = _apps_shown(admin.site.get_app_list(request_of(auditor)))
        auditor.user_permissions.add(Permission.objects.get(codename="view_ledgerentry"))
        auditor = type(auditor).objects.get(pk=auditor.pk)  # permissions read again
        after = _apps_shown(admin.site.get_app_list(request_of(auditor)))
        assert after != before
        assert after == _apps_shown(AdminSite.get_app_list(admin.site, request_of(auditor)))
