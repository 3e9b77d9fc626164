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
    accept_unconfirmed = forms.BooleanField(
        required=False,
        label=_("Decide now although the payment is not confirmed (it could still be reversed)"),
    )

    def __init__(self, *args, actions=None, unconfirmed=None, **kwargs):
        """`actions`: the decisions this case allows (all by default); `unconfirmed`: what
        is short of its confirmations (review_selectors.intent_unconfirmed), which adds
        the explicit confirmation to crediting or settling."""
        super().__init__(*args, **kwargs)
        if actions is not None:
            self.fields["action"].choices = [c for c in self.ACTIONS if c[0] in actions]
        if unconfirmed is None:
            del self.fields["accept_unconfirmed"]


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
