from django import forms
from django.utils.translation import gettext_lazy as _

from kernodeck.core.forms import Form
from kernodeck.provisioning.models import DriverCode, NodeState


class ReasonForm(Form):
    reason = forms.CharField(
        label=_("Reason"), max_length=300, widget=forms.Textarea(attrs={"rows": 2})
    )
    confirm = forms.BooleanField(label=_("I confirm this action"))


class ConfirmForm(Form):
    reason = forms.CharField(
        label=_("Reason"),
        max_length=300,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    confirm = forms.BooleanField(label=_("I confirm this action"))


class RetryForm(ConfirmForm):
    new_slots = forms.BooleanField(
        required=False, label=_("Allocate new slots (otherwise: the same slots)")
    )


class DeliverForm(Form):
    host = forms.CharField(label=_("Host"), max_length=253)
    port = forms.CharField(label=_("Port"), max_length=5, initial="22")
    user = forms.CharField(label=_("User"), max_length=32)
    url = forms.CharField(max_length=300, required=False, label=_("URL (notebook, inference)"))
    token = forms.CharField(
        max_length=500,
        required=False,
        label=_("Token or API key (stored encrypted)"),
        widget=forms.PasswordInput(render_value=False),
    )
    confirm = forms.BooleanField(label=_("The machine is ready and the customer's key installed"))


class NodeForm(Form):
    name = forms.SlugField(label=_("Name"), max_length=64)
    offer = forms.CharField(label=_("Offer"), max_length=50, help_text=_("The offer's slug."))
    gpu_count = forms.IntegerField(label=_("GPU count"), min_value=1, max_value=64)
    host = forms.CharField(label=_("Host"), max_length=253)
    port = forms.IntegerField(label=_("Port"), min_value=1, max_value=65535, initial=22)
    driver = forms.ChoiceField(label=_("Driver"), choices=DriverCode.choices)
    notes = forms.CharField(
        label=_("Notes"), required=False, widget=forms.Textarea(attrs={"rows": 2})
    )


class NodeStateForm(Form):
    state = forms.ChoiceField(label=_("State"), choices=NodeState.choices)
    reason = forms.CharField(label=_("Reason"), max_length=300)
    confirm = forms.BooleanField(label=_("I confirm this change"))
