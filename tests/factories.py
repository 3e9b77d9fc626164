"""Test data builders, in one place."""

import itertools

from kernodeck.accounts.models import User

PASSWORD = "correct horse battery staple 42"
_seq = itertools.count(1)


def make_user(*, email=None, password=PASSWORD, staff=False, **fields) -> User:
    n = next(_seq)
    fields.setdefault("first_name", f"Ada{n}")
    fields.setdefault("last_name", f"Lovelace{n}")
    return User.objects.create_user(
        email or f"user{n}@example.org", password, is_staff=staff, **fields
    )
