import pytest

from kernodeck.accounts.models import User
from kernodeck.demo.services import OPERATOR_EMAIL, demo_seed


@pytest.fixture
def demo_var(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNODECK_VAR_DIR", str(tmp_path))
    return tmp_path


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_the_operator_can_sign_in(demo_var):
    first = demo_seed()
    second = demo_seed()

    operator = User.objects.get(email=OPERATOR_EMAIL)
    assert operator.is_staff and not operator.is_superuser
    assert operator.groups.get().name == "Operators"
    assert operator.has_perms(
        ["payments.review_payment", "ledger.adjust_balance", "payments.set_rate"]
    )
    assert [login.created for login in first] == [True, True]
    assert [login.created for login in second] == [False, False]
    assert operator.check_password(first[0].password)
    assert second[0].password == first[0].password
    assert User.objects.count() == 2
