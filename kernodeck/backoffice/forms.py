import uuid

from django import forms
from django.utils.formats import date_format
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from kernodeck.core.forms import Form
from kernodeck.core.money import coin, money


class ReversalForm(Form):
    """An operator's decision on a payment reversed after settlement (settlement.reversal)."""

    DECISIONS = [
        ("suspended", _("Suspend the rental (a top-up: take the credit back, up to the balance)")),
        ("repay", _("Ask the customer to pay again")),
        ("loss_accepted", _("Accept the loss")),
    ]
    decision = forms.ChoiceField(label=_("Decision"), choices=DECISIONS, widget=forms.RadioSelect)
    reason = forms.CharField(
        label=_("Reason (kept in the audit trail, shown to the customer)"),
        widget=forms.Textarea(attrs={"rows": 2}),
    )


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
    intent = forms.ChoiceField(
        label=_("Attach to a payment"),
        required=False,
        widget=forms.RadioSelect,
    )
    note = forms.CharField(label=_("Note"), widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, candidates=(), **kwargs):
        """`candidates`: the payments this transfer may go to
        (review_selectors.transfer_candidate_intents), each offered by its words."""
        super().__init__(*args, **kwargs)
        self.fields["intent"].choices = [
            ("", _("None: close the case with the note only")),
            *((str(intent.pk), candidate_label(intent)) for intent in candidates),
        ]

    def clean_intent(self):
        value = self.cleaned_data["intent"]
        return uuid.UUID(value) if value else None


def candidate_label(intent) -> str:
    """How a payment is offered: method, what it pays, amount due, status, when, and
    whether it is the payment at the transfer's address."""
    if intent.order_id:
        purpose = gettext("order %(reference)s") % {"reference": intent.order.reference}
    elif intent.topup_id:
        purpose = gettext("top-up of %(amount)s") % {"amount": money(intent.topup.amount_usd)}
    else:
        purpose = intent.get_purpose_display()
    words = gettext("%(method)s · %(purpose)s · %(amount)s due · %(status)s · %(created)s") % {
        "method": intent.method,
        "purpose": purpose,
        "amount": coin(intent.amount_units, intent.method.decimals, intent.method.asset),
        "status": intent.get_status_display(),
        "created": date_format(localtime(intent.created_at), "Y-m-d H:i"),
    }
    if intent.at_transfer_address:
        words = gettext("%(words)s (at this address)") % {"words": words}
    return words
