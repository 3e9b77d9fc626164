"""Demo data: loaded by `kernodeck seed_demo`, idempotent."""

import json
import secrets
from dataclasses import dataclass

from django.db import transaction

from kernodeck.accounts.models import User, normalize_email
from kernodeck.backoffice.services import operators_group_ensure
from kernodeck.catalog.services import offer_create_if_missing
from kernodeck.core.services import audit_record
from kernodeck.demo.catalog import demo_offers
from kernodeck.demo.profile import var_dir
from kernodeck.payments.services import payment_methods_ensure
from kernodeck.provisioning.services import fleet_create_for_offer

OPERATOR_EMAIL = "operator@kernodeck.test"
CUSTOMER_EMAIL = "customer@kernodeck.test"


@dataclass
class DemoLogin:
    role: str
    email: str
    password: str
    created: bool


def _credentials_file():
    return var_dir() / "demo-logins.json"


def _remembered() -> dict:
    path = _credentials_file()
    return json.loads(path.read_text()) if path.exists() else {}


def _remember(logins: dict) -> None:
    path = _credentials_file()
    path.write_text(json.dumps(logins, indent=2))
    path.chmod(0o600)


def _demo_user(*, email, first_name, last_name, staff, known) -> DemoLogin:
    role = "operator" if staff else "customer"
    user = User.objects.filter(email=normalize_email(email)).first()
    if user is not None:
        if staff:
            user.groups.add(operators_group_ensure())
        return DemoLogin(role, email, known.get(email, "(set when it was created)"), False)
    password = "demo-" + secrets.token_urlsafe(15)
    with transaction.atomic():
        user = User.objects.create_user(
            email,
            password,
            first_name=first_name,
            last_name=last_name,
            is_staff=staff,
        )
        if staff:
            # An operator, not a superuser: the "Operators" group's named permissions.
            user.groups.add(operators_group_ensure())
        audit_record(action="account.registered", target=user, data={"demo": True})
    return DemoLogin(role, email, password, True)


def demo_seed_payment_methods() -> int:
    return payment_methods_ensure()


def demo_seed_catalog() -> int:
    """Create the demo offers that do not exist yet, each with a demo fleet of nodes that
    holds its `fleet_units`; return how many offers were created."""
    created = 0
    for fields in demo_offers():
        units = fields.pop("fleet_units")
        offer = offer_create_if_missing(**fields)
        if offer is not None:
            fleet_create_for_offer(offer=offer, units=units, host_domain="demo.kernodeck.test")
            created += 1
    return created


def demo_seed() -> list[DemoLogin]:
    """Create the demo operator and customer once; return their logins."""
    known = _remembered()
    logins = [
        _demo_user(
            email=OPERATOR_EMAIL, first_name="Olga", last_name="Operadora", staff=True, known=known
        ),
        _demo_user(
            email=CUSTOMER_EMAIL,
            first_name="Carlos",
            last_name="Cliente",
            staff=False,
            known=known,
        ),
    ]
    _remember({**known, **{login.email: login.password for login in logins if login.created}})
    return logins


def demo_logins() -> dict:
    return _remembered()
