from django import forms

from kernodeck.core.forms import Form
from kernodeck.provisioning.models import DriverCode, NodeState


class ReasonForm(Form):
    reason = forms.CharField(max_length=300, widget=forms.Textarea(attrs={"rows": 2}))
    confirm = forms.BooleanField(label="I confirm this action")


class ConfirmForm(Form):
    reason = forms.CharField(
        max_length=300, required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    confirm = forms.BooleanField(label="I confirm this action")


class RetryForm(ConfirmForm):
    new_slots = forms.BooleanField(
        required=False, label="Allocate new slots (otherwise: the same slots)"
    )


class DeliverForm(Form):
    host = forms.CharField(max_length=253)
    port = forms.CharField(max_length=5, initial="22")
    user = forms.CharField(max_length=32)
    url = forms.CharField(max_length=300, required=False, label="URL (notebook, inference)")
    token = forms.CharField(
        max_length=500,
        required=False,
        label="Token or API key (stored encrypted)",
        widget=forms.PasswordInput(render_value=False),
    )
    confirm = forms.BooleanField(label="The machine is ready and the customer's key installed")


class NodeForm(Form):
    name = forms.SlugField(max_length=64)
    offer = forms.CharField(max_length=50, help_text="The offer's slug.")
    gpu_count = forms.IntegerField(min_value=1, max_value=64)
    host = forms.CharField(max_length=253)
    port = forms.IntegerField(min_value=1, max_value=65535, initial=22)
    driver = forms.ChoiceField(choices=DriverCode.choices)
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class NodeStateForm(Form):
    state = forms.ChoiceField(choices=NodeState.choices)
    reason = forms.CharField(max_length=300)
    confirm = forms.BooleanField(label="I confirm this change")
