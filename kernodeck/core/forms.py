"""Glue between service errors and Django forms, and our forms' plain fields."""

import html

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.template.loader import render_to_string
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

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


# The widgets `fields_html` writes itself: Django's input.html, textarea.html, and a
# select.html and a radio.html without option groups.
_INPUTS = (forms.TextInput, forms.NumberInput, forms.EmailInput, forms.URLInput)


def _attrs_html(attrs: dict) -> str:
    """What django/forms/widgets/attrs.html writes."""
    return "".join(
        f" {name}" if value is True else f' {name}="{html.escape(str(value))}"'
        for name, value in attrs.items()
        if value is not False
    )


def _control_html(widget, name: str, value, attrs: dict) -> str | None:
    """The widget as its Django template writes it, or None for another widget."""
    kind = type(widget)
    if kind in _INPUTS:
        value = widget.format_value(value)
        shown = f' value="{html.escape(str(value))}"' if value is not None else ""
        return f'<input type="{widget.input_type}" name="{name}"{shown}{_attrs_html(attrs)}>'
    if kind is forms.Textarea:
        value = widget.format_value(value)
        text = conditional_escape(value) if value else ""
        return f'<textarea name="{name}"{_attrs_html(attrs)}>\n{text}</textarea>'
    if kind is forms.Select and not widget.option_inherits_attrs:
        options = []
        for group, choices, _index in widget.optgroups(name, widget.format_value(value), attrs):
            if group:
                return None
            options.extend(
                f'\n  <option value="{html.escape(str(option["value"]))}"'
                f"{_attrs_html(option['attrs'])}>{conditional_escape(option['label'])}</option>\n"
                for option in choices
            )
        return f'<select name="{name}"{_attrs_html(attrs)}>{"".join(options)}\n</select>'
    if kind is forms.RadioSelect:
        return _radios_html(widget, name, value, attrs)
    return None


def _radios_html(widget, name: str, value, attrs: dict) -> str | None:
    """What django/forms/widgets/radio.html (multiple_input.html, each option through
    input_option.html) writes, or None for option groups."""
    options = []
    for group, choices, _index in widget.optgroups(name, widget.format_value(value), attrs):
        if group:
            return None
        for option in choices:
            option_attrs = option["attrs"]
            if not option["wrap_label"]:
                return None
            label_for = (
                f' for="{html.escape(str(option_attrs["id"]))}"' if option_attrs.get("id") else ""
            )
            shown = (
                f' value="{html.escape(str(option["value"]))}"'
                if option["value"] is not None
                else ""
            )
            options.append(
                f"<div>\n    <label{label_for}>"
                f'<input type="{option["type"]}" name="{html.escape(option["name"])}"{shown}'
                f"{_attrs_html(option_attrs)}>\n {conditional_escape(option['label'])}</label>"
                "\n\n</div>"
            )
    box = f' id="{html.escape(str(attrs["id"]))}"' if attrs.get("id") else ""
    if attrs.get("class"):
        box += f' class="{html.escape(str(attrs["class"]))}"'
    return f"<div{box}>{''.join(options)}\n</div>"


def _plain_field_html(field) -> str | None:
    """One field's group as forms/fields.html writes it, or None where this does not know
    how (another widget, no label or no id, a label suffix or a required-field class)."""
    widget, form = field.field.widget, field.form
    if (
        (widget.use_fieldset and (type(widget) is not forms.RadioSelect or field.help_text))
        or not field.label
        or not field.auto_id
        or "id" in widget.attrs
        or field.field.label_suffix
        or form.label_suffix
        or hasattr(form, "required_css_class")
    ):
        return None
    attrs = widget.build_attrs(widget.attrs, {**field.build_widget_attrs({}), "id": field.auto_id})
    control = _control_html(widget, html.escape(field.html_name), field.value(), attrs)
    if control is None:
        return None
    help_text = (
        f'<div class="helptext" id="{html.escape(field.auto_id)}_helptext">{field.help_text}</div>'
        if field.help_text  # `|safe` in Django's field.html: a help text is the form's HTML
        else ""
    )
    if widget.use_fieldset:  # its legend names no input (RadioSelect.id_for_label)
        return (
            f'<div class="field" data-field="{html.escape(field.name)}"><fieldset>\n'
            f"  <legend>{conditional_escape(field.label)}</legend>\n\n\n\n{control}"
            "</fieldset></div>\n"
        )
    return (
        f'<div class="field" data-field="{html.escape(field.name)}">'
        f'<label for="{html.escape(field.auto_id)}">{conditional_escape(field.label)}</label>'
        f"\n\n{help_text}\n\n{control}</div>\n"
    )


def fields_html(form) -> str:
    """An unbound form's fields as the template forms/fields.html renders them, without
    the template engine: each field through Django's field, widget and attrs templates
    was some 0.3 ms, most of a page with one small form. Any form this does not know
    (bound, so maybe with errors; another widget; a help text) goes through the template."""
    if not form.is_bound:
        parts = [_plain_field_html(field) for field in form]
        if None not in parts:
            return mark_safe("".join(parts) + "\n")  # noqa: S308 - every value is escaped
    return render_to_string("forms/fields.html", {"form": form})
