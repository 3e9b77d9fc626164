from django import forms
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from kernodeck.catalog.models import DURATIONS, MAX_UNITS, MIN_UNITS, Backend, Preparation
from kernodeck.core.forms import Form

MEMORY_STEPS = (24, 32, 48, 80, 96, 141, 180, 192, 256)


class CatalogFilterForm(Form):
    backend = forms.ChoiceField(
        label=_("Compute stack"),
        required=False,
        choices=[("", _("CUDA and ROCm")), *Backend.choices],
    )
    min_memory = forms.TypedChoiceField(
        label=_("Memory per GPU, at least"),
        required=False,
        coerce=int,
        empty_value=0,
        choices=[("", _("any")), *[(str(m), f"{m} GiB") for m in MEMORY_STEPS]],
    )
    sort = forms.ChoiceField(
        label=_("Sort by"),
        required=False,
        choices=[
            ("price", _("Price, lowest first")),
            ("-price", _("Price, highest first")),
            ("memory", _("Memory, largest first")),
        ],
    )


class ConfigureForm(Form):
    """The configurator's inputs. The quote validates them, so the messages are the API's."""

    days = forms.CharField(
        label=_("Duration"),
        required=False,
        widget=forms.RadioSelect(
            choices=[(str(d), format_lazy(_("{days} days"), days=d)) for d in DURATIONS]
        ),
    )
    units = forms.CharField(
        label=_("Units"),
        required=False,
        widget=forms.NumberInput(
            attrs={"min": MIN_UNITS, "max": MAX_UNITS, "inputmode": "numeric"}
        ),
        help_text=_("1 to 10. A unit is hardware you rent, not a training batch."),
    )
    preparation = forms.CharField(label=_("Preparation"), required=False)

    def __init__(self, *args, preparations=(), **kwargs):
        super().__init__(*args, **kwargs)
        labels = dict(Preparation.choices)
        self.fields["preparation"].widget = forms.RadioSelect(
            choices=[(code, labels.get(code, code)) for code in preparations]
        )
