"""Test data builders, in one place."""

import itertools
from decimal import Decimal

from kernodeck.accounts.models import User
from kernodeck.orders.models import Order
from kernodeck.settlement import orders as settlement_orders

PASSWORD = "correct horse battery staple 42"
_seq = itertools.count(1)


def make_user(*, email=None, password=PASSWORD, staff=False, **fields) -> User:
    n = next(_seq)
    fields.setdefault("first_name", f"Ada{n}")
    fields.setdefault("last_name", f"Lovelace{n}")
    return User.objects.create_user(
        email or f"user{n}@example.org", password, is_staff=staff, **fields
    )


def make_offer(
    *,
    slug=None,
    gpus_per_unit=1,
    units_total=10,
    prices=None,
    preparations=("python", "pytorch", "notebook", "inference"),
    backend="cuda",
    **fields,
):
    from decimal import Decimal

    from kernodeck.catalog.models import Offer, OfferPrice

    n = next(_seq)
    offer = Offer.objects.create(
        slug=slug or f"gpu-{n}",
        gpu_model=fields.pop("gpu_model", f"GPU {n} 80 GB"),
        vendor="amd" if backend == "rocm" else "nvidia",
        backend=backend,
        memory_gib=fields.pop("memory_gib", 80),
        gpus_per_unit=gpus_per_unit,
        preparations=list(preparations),
        **fields,
    )
    for days, price in (prices or {3: "100.00", 7: "210.00", 30: "800.00"}).items():
        OfferPrice.objects.create(offer=offer, days=days, unit_price_usd=Decimal(price))
    if units_total:
        # The fleet that holds `units_total` units: capacity is counted from its slots.
        from kernodeck.provisioning.services import fleet_create_for_offer

        fleet_create_for_offer(offer=offer, units=units_total)
    return offer


def make_order(*, owner=None, offer=None, days=7, units=1, preparation="pytorch"):
    from kernodeck.orders import services

    return services.order_register(
        owner=owner or make_user(),
        offer=(offer or make_offer()).slug,
        days=days,
        units=units,
        preparation=preparation,
    )


def api_post(client, path, body=None):
    """POST JSON to /api/v1`path`."""
    return client.post(f"/api/v1{path}", body or {}, content_type="application/json")


def make_ssh_key(user, *, name="laptop"):
    """Give `user` a fresh Ed25519 public key (access needs one)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from kernodeck.accounts import services

    public = (
        ed25519.Ed25519PrivateKey.generate()
        .public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return services.ssh_key_add(user=user, public_key=public, name=name)


def make_settled_order(*, owner=None, offer=None, units=1, days=7, preparation="pytorch"):
    """An order paid (as if by a confirmed payment): it is queued and, if slots are free,
    allocated by the task that runs after commit."""

    order = make_order(owner=owner, offer=offer, units=units, days=days, preparation=preparation)
    settlement_orders.order_settle(order=order, cause={"test": "settled"})
    order.refresh_from_db()
    return order


def make_operator(*, perms=("operate_rentals", "view_access")):
    """A staff account with the given provisioning permissions."""
    from django.contrib.auth.models import Permission

    user = make_user(staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="provisioning", codename__in=perms)
    )
    return user


TEST_HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestHostKeyOfANodeInServiceForTests00"


def make_ssh_node(*, host_key=TEST_HOST_KEY, **fields):
    """An ssh node already in service: as if its host key had been accepted and its first
    inspection had succeeded (a new ssh node starts in maintenance until then)."""
    from kernodeck.core import clock
    from kernodeck.provisioning.models import Node
    from kernodeck.provisioning.services import node_create

    node = node_create(driver="ssh", **fields)
    Node.objects.filter(pk=node.pk).update(
        host_key=host_key, commissioned_at=clock.now(), state="available", state_reason=""
    )
    node.refresh_from_db()
    return node


def order_row(*, offer, reference, owner, days=7, price="210.00", **fields) -> Order:
    """An unsaved one-GPU order of `offer`, its snapshot of the offer filled as registration
    writes it, for the data sets written with bulk_create (query budgets, bench/)."""
    return Order(
        reference=reference,
        owner=owner,
        offer=offer,
        offer_slug=offer.slug,
        gpu_model=offer.gpu_model,
        backend=offer.backend,
        memory_gib=offer.memory_gib,
        gpus_per_unit=1,
        days=days,
        units=1,
        gpus=1,
        preparation="pytorch",
        unit_price_usd=Decimal(price),
        total_usd=Decimal(price),
        **fields,
    )
