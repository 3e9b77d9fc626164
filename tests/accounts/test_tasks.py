from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from kernodeck.accounts.models import Session
from kernodeck.accounts.tasks import clear_expired_sessions

pytestmark = pytest.mark.django_db


def test_tasks_run_immediately_in_the_test_suite():
    assert settings.HUEY["immediate"] is True


def test_clear_expired_sessions_task_deletes_only_expired_ones():
    Session.objects.create(
        session_key="old", session_data="", expire_date=timezone.now() - timedelta(days=1)
    )
    Session.objects.create(
        session_key="new", session_data="", expire_date=timezone.now() + timedelta(days=1)
    )

    clear_expired_sessions()

    assert list(Session.objects.values_list("session_key", flat=True)) == ["new"]
