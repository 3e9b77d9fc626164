"""The time left before a rental ends, in words: `{{ minutes_left|time_left }}`."""

from django import template

from kernodeck.notifications.reminders import time_left_in_words

register = template.Library()


@register.filter
def time_left(minutes) -> str:
    return time_left_in_words(minutes)
