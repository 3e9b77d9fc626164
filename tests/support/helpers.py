"""Builders for support tests."""

from datetime import timedelta
from decimal import Decimal

from django.contrib.auth.models import Permission

from kernodeck.core import clock
from kernodeck.ledger import services as ledger_services
from kernodeck.orders.models import Order
from kernodeck.settlement import orders as settlement_orders
from kernodeck.support import services
from tests.factories import make_order, make_user

HF = "hf_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZ012345"


def make_agent(**fields):
    """Staff with the support permission."""
    agent = make_user(staff=True, **fields)
    agent.user_permissions.add(Permission.objects.get(codename="answer_ticket"))
    return type(agent).objects.get(pk=agent.pk)  # fresh permission cache


def fund(account, usd, *, operator=None):
    return ledger_services.balance_adjust(
        account=account,
        amount_usd=Decimal(usd),
        actor=operator or make_user(staff=True),
        reason="test funding",
    )


def settled_order(*, owner=None, **kwargs) -> Order:
    """An order paid from the balance (the real path)."""
    owner = owner or make_user()
    order = make_order(owner=owner, **kwargs)
    fund(owner, order.total_usd)
    order, _entry = settlement_orders.order_pay_with_balance(order=order, actor=owner)
    return order


def problem_ticket(*, owner, body="It crashes on the first step.", order=None, **kwargs):
    return services.ticket_create(
        owner=owner,
        kind="problem",
        subject=kwargs.pop("subject", "Crash"),
        body=body,
        order=order.reference if order else None,
        fields=kwargs.pop("fields", {"when": "first_computation"}),
        **kwargs,
    )


def in_days(days):
    return clock.now() + timedelta(days=days)


def active_rental(*, owner=None, days=7, token=""):
    """A settled order whose access was delivered (rental active, with dates)."""
    from kernodeck.provisioning import services as provisioning_services
    from tests.factories import make_operator, make_ssh_key

    owner = owner or make_user()
    make_ssh_key(owner)
    operator = make_operator()
    order = settled_order(owner=owner, days=days)
    order = provisioning_services.rental_prepare(order=order, actor=operator)
    extra = {"url": "https://127.0.0.1:8888/lab", "token": token} if token else {}
    return provisioning_services.rental_deliver(
        order=order, actor=operator, host="gpu1.example.org", port=2222, user="kd-abc", **extra
    )


def png_bytes(*, extra_chunks=(), trailer=b"") -> bytes:
    """A real 1x1 PNG (signature, IHDR, IDAT, IEND), with optional chunks and a trailer."""
    import struct
    import zlib

    def chunk(kind, data):
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    body = chunk(b"IHDR", header)
    for kind, data in extra_chunks:
        body += chunk(kind, data)
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", pixels) + chunk(b"IEND", b"") + trailer


def jpeg_bytes(*, comment=b"", trailer=b"", segments=()) -> bytes:
    """A JPEG's segment structure: SOI, APP0 (JFIF), optional (marker, data) segments and
    COM, SOS with scan data (a stuffed 0xFF00 and a restart marker inside), EOI, then an
    optional trailer."""

    def segment(marker, data):
        return b"\xff" + marker + (len(data) + 2).to_bytes(2, "big") + data

    out = b"\xff\xd8" + segment(b"\xe0", b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")
    for marker, data in segments:
        out += segment(marker, data)
    if comment:
        out += segment(b"\xfe", comment)
    out += segment(b"\xda", b"\x01\x01\x00\x00\x3f\x00")
    out += b"\x12\x34\xff\x00\x56\xff\xd0\x78"
    return out + b"\xff\xd9" + trailer
