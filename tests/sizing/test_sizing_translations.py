"""Messages the Spanish catalogue must carry although makemessages cannot see them: the pure
estimator's refusals (shown through gettext by the selectors) and this app's links in other
apps' templates."""

import ast
from pathlib import Path

import pytest
from django.utils import translation

from kernodeck.sizing import estimator


def estimator_messages() -> list[str]:
    tree = ast.parse(Path(estimator.__file__).read_text(encoding="utf-8"))
    messages = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "EstimateError":
            first = node.args[0]
            if isinstance(first, ast.JoinedStr):
                messages.append(f"must be between 1 and {estimator.MAX_GPUS}.")
            else:
                messages.append(ast.literal_eval(first))
    return sorted(set(messages))


MESSAGES = [
    *estimator_messages(),
    "Read the guide:",
    "Not sure which GPU? Estimate it.",
]


def test_the_estimator_refusals_are_all_found():
    assert len(estimator_messages()) >= 12


@pytest.mark.parametrize("message", MESSAGES)
def test_each_is_translated_to_spanish(message):
    with translation.override("es"):
        assert translation.gettext(message) != message
