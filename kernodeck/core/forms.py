"""Glue between service errors and Django forms."""

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS

from kernodeck.core.errors import ServiceError


def add_service_error(form, error: ServiceError) -> None:
    """Show a service refusal next to its field, or at the top of the form."""
    field = error.field if error.field in form.fields else None
    form.add_error(field or NON_FIELD_ERRORS, error.message)


class Form(forms.Form):
    """Our forms: labels without the trailing colon."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
