"""The one status vocabulary of payment instructions (issue 12): decided states win."""

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from django.template import Context, Template
from django.utils import translation

from kernodeck.payments.vocabulary import STATES, intent_state

AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def intent(status="pending", resolution="", **flags):
    fields = {"declared_at": None, "abandoned_at": None, "closed_at": None, "exception": ""}
    fields.update(flags)
    return SimpleNamespace(status=status, resolution=resolution, **fields)


@pytest.mark.parametrize(
    ("case", "key", "label", "tone"),
    [
        (intent(), "waiting", "Waiting for your transfer", "warn"),
        (intent(declared_at=AT), "declared", "Declared by you, awaiting verification", "info"),
        (intent(declared_at=AT, abandoned_at=AT), "abandoned", "Abandoned", "muted"),
        (intent(declared_at=AT, closed_at=AT), "closed", "Closed: do not send", "bad"),
        (intent("detected", abandoned_at=AT), "detected", "Seen on the blockchain", "info"),
        (intent("confirmed", declared_at=AT), "confirmed", "Confirmed", "ok"),
        (intent("allocated", declared_at=AT), "allocated", "Confirmed and allocated", "ok"),
        (intent("expired", abandoned_at=AT), "expired", "Expired", "muted"),
        (intent("overpaid"), "review", "Under review", "bad"),
        (intent("underpaid"), "review", "Under review", "bad"),
        (intent("late"), "review", "Under review", "bad"),
        (intent("overpaid", "credited"), "decided_credited", "Credited to the balance", "ok"),
        (intent("allocated", "settled"), "decided_settled", "Accepted and settled", "ok"),
        (intent("late", "refunded"), "decided_refunded", "Refunded off-platform", "muted"),
        # Money that counted and then left the chain says so above any decision.
        (
            intent("allocated", exception="reversed"),
            "reversed",
            "Reversed after settlement",
            "bad",
        ),
        (
            intent("overpaid", "credited", exception="reversed"),
            "reversed",
            "Reversed after settlement",
            "bad",
        ),
    ],
)
def test_each_combination_reads_as_one_state(case, key, label, tone):
    with translation.override("en"):
        state = intent_state(case)
    assert (state.key, state.label, state.tone) == (key, label, tone)


def test_one_tone_per_meaning():
    # Money counted is green, never grey; nothing counted is never green.
    tones = {key: tone for key, (_label, tone) in STATES.items()}
    assert {k for k, t in tones.items() if t == "ok"} == {
        "decided_settled",
        "decided_credited",
        "allocated",
        "confirmed",
    }
    assert set(tones.values()) <= {"ok", "info", "warn", "bad", "muted"}


def test_every_label_has_a_spanish_translation():
    with translation.override("es"):
        labels = {key: intent_state_label(key) for key in STATES}
    assert labels["decided_credited"] == "Abonado al saldo"
    assert labels["declared"] == "Declarado por ti, pendiente de verificación"
    with translation.override("en"):
        english = {key: intent_state_label(key) for key in STATES}
    assert [key for key in STATES if labels[key] == english[key]] == []


def intent_state_label(key):
    return str(STATES[key][0])


def test_the_badge_tag_renders_the_state():
    template = Template("{% load payment_badges %}{% intent_badge i %}")
    with translation.override("en"):
        html = template.render(Context({"i": intent("overpaid", "credited")}))
    assert html == (
        '<span class="badge ok" data-state="decided_credited">Credited to the balance</span>'
    )
