from django import forms
from django.utils.translation import gettext_lazy as _

from kernodeck.core.forms import Form
from kernodeck.ledger.models import TOPUP_AMOUNTS


class TopUpForm(Form):
    amount_usd = forms.ChoiceField(
        label=_("Amount"),
        choices=[(str(a), f"{a:,} USD".replace(",", " ")) for a in TOPUP_AMOUNTS],
        widget=forms.RadioSelect,
        initial="100",
    )
    method = forms.ChoiceField(label=_("Pay with"), widget=forms.RadioSelect)

    def __init__(self, *args, methods=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["method"].choices = [
            (item.method.code, str(item.method)) for item in methods if item.available
        ]
