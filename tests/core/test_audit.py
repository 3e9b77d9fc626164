import pytest

from kernodeck.core import clock
from kernodeck.core.selectors import audit_events_for
from kernodeck.core.services import audit_record
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_audit_record_keeps_who_what_before_and_after_at_the_clock_time():
    from datetime import UTC, datetime

    moment = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    clock.freeze(moment)
    user = make_user()

    event = audit_record(
        action="account.profile_changed",
        target=user,
        actor=user,
        before={"last_name": "A"},
        after={"last_name": "B"},
    )

    assert (event.created_at, event.actor, event.target_type, event.target_id) == (
        moment,
        user,
        "accounts.user",
        str(user.pk),
    )
    assert list(audit_events_for(target_type="accounts.user", target_id=user.pk)) == [event]


def test_anonymous_actor_is_stored_as_the_system():
    from django.contrib.auth.models import AnonymousUser

    event = audit_record(action="x.y", target_type="t", target_id="1", actor=AnonymousUser())

    assert event.actor is None
