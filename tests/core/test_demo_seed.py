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


@pytest.mark.django_db
def test_seed_demo_refuses_outside_demo_mode_and_changes_nothing(demo_var, settings):
    from django.core.management import CommandError, call_command

    settings.KERNODECK_DEMO = False

    with pytest.raises(CommandError, match="seed_demo only runs in demo mode"):
        call_command("seed_demo")

    assert User.objects.count() == 0
    assert not (demo_var / "demo-logins.json").exists()


@pytest.mark.django_db
def test_seed_demo_runs_in_demo_mode(demo_var, settings):
    from io import StringIO

    from django.core.management import call_command

    settings.KERNODECK_DEMO = True
    out = StringIO()

    call_command("seed_demo", stdout=out)

    assert "Created demo operator: operator@kernodeck.test" in out.getvalue()
