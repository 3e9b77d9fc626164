from django import forms
from django.utils.translation import gettext_lazy as _

from kernodeck.core.forms import Form
from kernodeck.core.money import money
from kernodeck.ledger.models import TOPUP_AMOUNTS


class TopUpForm(Form):
    amount_usd = forms.ChoiceField(
        label=_("Amount"),
        # A callable, so each page writes the amounts in its own language ("2,000 USD").
        choices=lambda: [(str(a), money(a, places=0)) for a in TOPUP_AMOUNTS],
        widget=forms.RadioSelect,
        initial="100",
    )
    method = forms.ChoiceField(label=_("Pay with"), widget=forms.RadioSelect)

    def __init__(self, *args, methods=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["method"].choices = [
            (item.method.code, str(item.method)) for item in methods if item.available
        ]
