"""email_enqueue: one row per dedupe key, rendered in the account's language, sent after
commit only, and never carrying a secret."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.core import mail
from django.db import transaction

from kernodeck.core import clock
from kernodeck.notifications.models import OutboxMessage, OutboxStatus
from kernodeck.notifications.services import EVENTS, UnsafeContext, email_enqueue
from tests.factories import make_user

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
ENDS = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)

SAMPLE_CONTEXTS = {
    "order_registered": {
        "reference": "KD-AAAA-BBBB",
        "gpu_model": "H100 80 GB",
        "units": 2,
        "gpus": 2,
        "days": 7,
        "total_usd": "420.00",
        "hold_until": NOW,
    },
    "payment_confirmed": {
        "reference": "KD-AAAA-BBBB",
        "gpu_model": "H100 80 GB",
        "gpus": 2,
        "days": 7,
        "total_usd": "420.00",
    },
    "topup_credited": {"amount_usd": "500.00", "balance_usd": "620.00"},
    "rental_preparing": {
        "reference": "KD-AAAA-BBBB",
        "gpu_model": "H100 80 GB",
        "gpus": 2,
        "preparation": "PyTorch",
    },
    "rental_access_ready": {"reference": "KD-AAAA-BBBB", "starts_at": NOW, "ends_at": ENDS},
    "rental_reminder": {
        "reference": "KD-AAAA-BBBB",
        "hours_left": 24,
        "minutes_left": 24 * 60,
        "threshold_hours": 24,
        "ends_at": ENDS,
    },
    "rental_ended": {"reference": "KD-AAAA-BBBB", "ended_at": ENDS},
    "rental_failed": {"reference": "KD-AAAA-BBBB", "reason": "the node did not boot"},
    "rental_refunded": {"reference": "KD-AAAA-BBBB", "amount_usd": Decimal("420.00")},
    "ticket_reply": {
        "ticket_id": 42,
        "ticket_subject": "Extension & more",
        "ticket_path": "/support/42/",
    },
    "access_request_received": {"request_id": "1a2b3c4d"},
    "access_request_reply": {"request_id": "1a2b3c4d", "reply": "Which orders did you place?"},
    "access_password_link": {"link_path": "/account/new-password/MQ/abc-def/", "valid_hours": 24},
}


def test_every_event_has_a_sample_context():
    assert set(SAMPLE_CONTEXTS) == set(EVENTS)


def test_enqueueing_twice_with_one_key_stores_and_sends_once(send_after_commit):
    account = make_user(preferred_language="en")
    with send_after_commit():
        first = email_enqueue(
            account=account,
            event="topup_credited",
            context={"amount_usd": "100.00", "balance_usd": "100.00"},
            dedupe_key="topup_credited:1",
        )
    with send_after_commit():
        second = email_enqueue(
            account=account,
            event="topup_credited",
            context={"amount_usd": "999.00", "balance_usd": "999.00"},
            dedupe_key="topup_credited:1",
        )

    assert second.pk == first.pk
    assert OutboxMessage.objects.count() == 1
    assert len(mail.outbox) == 1
    assert mail.outbox[0].subject == "100.00 USD credited to your balance"
    assert mail.outbox[0].to == [account.email]
    first.refresh_from_db()
    assert (first.status, first.attempts, first.last_error) == (OutboxStatus.SENT, 1, "")
    assert first.sent_at is not None


@pytest.mark.django_db(transaction=True)
def test_nothing_is_sent_before_the_commit_and_nothing_after_a_rollback():
    account = make_user(preferred_language="en")
    context = {"amount_usd": "100.00", "balance_usd": "100.00"}

    with pytest.raises(RuntimeError), transaction.atomic():
        email_enqueue(account=account, event="topup_credited", context=context, dedupe_key="a")
        raise RuntimeError("the change failed")

    assert OutboxMessage.objects.count() == 0
    assert mail.outbox == []

    with transaction.atomic():
        email_enqueue(account=account, event="topup_credited", context=context, dedupe_key="b")
        assert mail.outbox == []  # still inside the transaction

    assert len(mail.outbox) == 1
    assert OutboxMessage.objects.get().status == OutboxStatus.SENT


@pytest.mark.parametrize(
    ("language", "subject", "greeting"),
    [
        ("es", "Pedido KD-AAAA-BBBB: tu acceso está listo", "Hola, Ada:"),
        ("en", "Order KD-AAAA-BBBB: your access is ready", "Hello Ada,"),
    ],
)
def test_the_message_is_written_in_the_accounts_language(language, subject, greeting):
    account = make_user(first_name="Ada", preferred_language=language)

    message = email_enqueue(
        account=account,
        event="rental_access_ready",
        context=SAMPLE_CONTEXTS["rental_access_ready"],
        dedupe_key=f"access:{language}",
    )

    assert message.language == language
    assert message.subject == subject
    assert message.body_text.startswith(greeting + "\n")
    assert "http://127.0.0.1:8000/orders/KD-AAAA-BBBB/" in message.body_text
    assert "2026-12-01 10:00" in message.body_text
    assert "2026-12-03 10:00" in message.body_text


def test_a_new_account_writes_in_spanish_by_default():
    account = make_user()

    assert account.preferred_language == "es"


@pytest.mark.parametrize("event", sorted(EVENTS))
@pytest.mark.parametrize("language", ["es", "en"])
def test_every_event_renders_in_both_languages(event, language):
    account = make_user(first_name="Ada", preferred_language=language)

    message = email_enqueue(
        account=account, event=event, context=SAMPLE_CONTEXTS[event], dedupe_key=event
    )

    assert message.subject
    assert "\n" not in message.subject
    assert "{{" not in message.body_text and "{%" not in message.body_text
    assert "&amp;" not in message.subject + message.body_text  # plain text, not HTML
    greeting = {"es": "Hola, Ada:", "en": "Hello Ada,"}[language]
    assert message.body_text.startswith(greeting + "\n")
    assert "\n— Kernodeck\nhttp://127.0.0.1:8000\n" in message.body_text
    if "reference" in SAMPLE_CONTEXTS[event]:
        assert "KD-AAAA-BBBB" in message.subject


def test_the_reminder_carries_the_export_checklist_in_both_languages():
    english = email_enqueue(
        account=make_user(preferred_language="en"),
        event="rental_reminder",
        context=SAMPLE_CONTEXTS["rental_reminder"],
        dedupe_key="r-en",
    )
    spanish = email_enqueue(
        account=make_user(preferred_language="es"),
        event="rental_reminder",
        context=SAMPLE_CONTEXTS["rental_reminder"],
        dedupe_key="r-es",
    )

    assert english.subject == "Order KD-AAAA-BBBB ends in 24 hours: export your results"
    for line in (
        "- your results",
        "- your checkpoints",
        "- your parameters",
        "- your environment information (versions, launch command)",
        "verify the copy",
        "Keep one copy in a place you control",
    ):
        assert line in english.body_text
    assert spanish.subject == "El pedido KD-AAAA-BBBB vence en 24 horas: exporta tus resultados"
    for line in ("- tus resultados", "- tus checkpoints", "- tus parámetros", "verificar la"):
        assert line in spanish.body_text


@pytest.mark.parametrize(
    "context",
    [
        {"reference": "KD-1", "starts_at": NOW, "ends_at": ENDS, "token": "abc"},
        {"reference": "KD-1", "starts_at": NOW, "ends_at": ENDS, "password": "x"},
        {"reference": "KD-1", "starts_at": NOW, "ends_at": ENDS, "api_key": "x"},
        {"reference": "KD-1", "starts_at": NOW, "ends_at": ENDS, "sshKey": "x"},
        {"reference": "KD-1", "starts_at": NOW, "ends_at": ENDS, "access": {"Token": "x"}},
        {"reference": "KD-1", "starts_at": NOW, "ends_at": ENDS, "notes": [{"secret": 1}]},
        {"reference": "kd_" + "A" * 43, "starts_at": NOW, "ends_at": ENDS},
        {"reference": "-----BEGIN OPENSSH PRIVATE KEY-----", "starts_at": NOW, "ends_at": ENDS},
        {"reference": "KD-1", "starts_at": NOW, "ends_at": ENDS, "price": 1.5},
        {"reference": object(), "starts_at": NOW, "ends_at": ENDS},
    ],
)
def test_a_context_that_might_carry_a_secret_is_refused(context):
    account = make_user()

    with pytest.raises(UnsafeContext):
        email_enqueue(
            account=account, event="rental_access_ready", context=context, dedupe_key="s"
        )

    assert OutboxMessage.objects.count() == 0
    assert mail.outbox == []


def test_unknown_events_and_missing_context_keys_are_refused():
    account = make_user()

    with pytest.raises(ValueError, match="unknown e-mail event"):
        email_enqueue(account=account, event="nope", context={}, dedupe_key="k")
    with pytest.raises(ValueError, match="needs context keys: ends_at, starts_at"):
        email_enqueue(
            account=account,
            event="rental_access_ready",
            context={"reference": "KD-1"},
            dedupe_key="k",
        )
    with pytest.raises(ValueError, match="dedupe_key"):
        email_enqueue(
            account=account,
            event="topup_credited",
            context=SAMPLE_CONTEXTS["topup_credited"],
            dedupe_key="x" * 201,
        )
    assert OutboxMessage.objects.count() == 0


def test_created_and_first_attempt_times_come_from_the_clock():
    clock.freeze(NOW)

    message = email_enqueue(
        account=make_user(),
        event="topup_credited",
        context=SAMPLE_CONTEXTS["topup_credited"],
        dedupe_key="t",
    )

    assert (message.created_at, message.next_attempt_at) == (NOW, NOW)
    assert message.context == {"amount_usd": "500.00", "balance_usd": "620.00"}


@pytest.mark.parametrize(
    ("language", "greeting"), [("es", "Hola, Ada:"), ("en", "Hello Ada,"), ("xx", "Hola, Ada:")]
)
def test_an_email_to_an_address_names_no_account(language, greeting):
    from kernodeck.notifications.services import email_enqueue_to_address

    message = email_enqueue_to_address(
        to_email="someone@example.org",
        language=language,
        first_name="Ada",
        event="access_request_received",
        context=SAMPLE_CONTEXTS["access_request_received"],
        dedupe_key=f"to-address:{language}",
    )

    assert message.account is None
    assert message.to_email == "someone@example.org"
    assert message.language == ("en" if language == "en" else "es")
    assert message.body_text.startswith(greeting + "\n")
    assert "1a2b3c4d" in message.subject
