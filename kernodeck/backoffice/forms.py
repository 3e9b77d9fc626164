from django import forms
from django.utils.translation import gettext_lazy as _

from kernodeck.core.forms import Form


class DecisionForm(Form):
    ACTIONS = [
        ("settle", _("Accept and settle")),
        ("credit", _("Credit the received value to the customer's balance")),
        ("refunded", _("Mark as refunded off-platform")),
    ]
    action = forms.ChoiceField(label=_("Decision"), choices=ACTIONS, widget=forms.RadioSelect)
    reason = forms.CharField(
        label=_("Reason (kept in the audit trail, shown to the customer)"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class RecordTransferForm(Form):
    txid = forms.CharField(label=_("Transaction id"), max_length=100)
    amount = forms.CharField(label=_("Amount received (in the asset, e.g. 0.0123)"), max_length=40)
    reason = forms.CharField(label=_("Reason"), widget=forms.Textarea(attrs={"rows": 2}))


class TransferResolveForm(Form):
    intent = forms.UUIDField(
        label=_("Attach to payment (id, optional)"),
        required=False,
        help_text=_("Leave empty to close the case with the note only."),
    )
    note = forms.CharField(label=_("Note"), widget=forms.Textarea(attrs={"rows": 2}))
