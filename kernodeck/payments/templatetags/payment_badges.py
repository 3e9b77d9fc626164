from django import template
from django.utils.html import format_html

from kernodeck.payments import vocabulary
from kernodeck.payments.vocabulary import ended_rows, funds_sent_note, intent_state

register = template.Library()


@register.simple_tag
def intent_badge(intent):
    """The payment's one badge: the same words and colour on every page."""
    state = intent_state(intent)
    return format_html(
        '<span class="badge {}" data-state="{}">{}</span>', state.tone, state.key, state.label
    )


@register.filter
def intent_state_key(intent):
    return intent_state(intent).key


@register.filter
def intent_outcome(intent):
    """What the payment's money did, for its purpose (vocabulary.OUTCOMES)."""
    return vocabulary.intent_outcome(intent)


@register.simple_tag
def intent_funds_note(intent):
    """What money sent now to unpayable instructions does (vocabulary.funds_sent_note)."""
    return funds_sent_note(intent)


@register.simple_tag
def intent_ended_rows(intent):
    """Abandoned on / expired on, past times only (vocabulary.ended_rows)."""
    return ended_rows(intent)
