"""Forms of the ssh nodes' back-office pages: the values go to node_health's services."""

from django import forms
from django.utils.translation import gettext_lazy as _

from kernodeck.core.forms import Form

RECIPE = forms.Textarea(attrs={"rows": 4})


class NodeSshForm(Form):
    retention_hours = forms.CharField(
        label=_("Keep a finished rental's workspace for (hours)"), max_length=8
    )
    agent_dir = forms.CharField(label=_("Agent folder on the node"), max_length=200)
    torch_index_url = forms.CharField(
        label=_("PyTorch wheel source for this node's backend"), max_length=300, required=False
    )
    inference_model = forms.CharField(
        label=_("Model served by the inference preparation"), max_length=200, required=False
    )
    recipe_python = forms.CharField(
        label="python", required=False, strip=False, widget=forms.Textarea
    )
    recipe_pytorch = forms.CharField(
        label="pytorch", required=False, strip=False, widget=forms.Textarea
    )
    recipe_notebook = forms.CharField(
        label="notebook", required=False, strip=False, widget=forms.Textarea
    )
    recipe_inference = forms.CharField(
        label="inference", required=False, strip=False, widget=forms.Textarea
    )

    def recipes(self) -> dict:
        return {
            code: self.cleaned_data[f"recipe_{code}"]
            for code in ("python", "pytorch", "notebook", "inference")
        }


class HostKeyAcceptForm(Form):
    offered = forms.CharField(max_length=1000, widget=forms.HiddenInput)
