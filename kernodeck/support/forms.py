"""The guided ticket forms: each field says why it is asked. Validation is the services'."""

from django import forms
from django.utils.translation import gettext_lazy as _

from kernodeck.core.forms import Form
from kernodeck.payments.vocabulary import intent_state
from kernodeck.support.models import (
    STAFF_STATUS_CHOICES,
    STAFF_STATUS_LABELS,
    WHEN_LABELS,
    Kind,
    Status,
)

PROBLEM_WHEN_CHOICES = list(WHEN_LABELS.items())


_ACCEPT = (
    ".txt,.log,.py,.json,.yaml,.yml,.csv,.md,.sh,.toml,.ini,.cfg,.out,.err,image/png,image/jpeg"
)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Zero or more files; sizes and types are checked by `services.attachment_check`."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": _ACCEPT}))
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        if isinstance(data, (list, tuple)):
            return [super(MultipleFileField, self).clean(item, initial) for item in data if item]
        return [super().clean(data, initial)] if data else []


ATTACHMENTS_HELP = _(
    "Optional: up to 3 text files (logs, scripts, configuration) or PNG/JPEG screenshots, "
    "512 KiB each. Secrets in text files are removed as in the message."
)


def _area(rows=4):
    return forms.Textarea(attrs={"rows": rows, "spellcheck": "false"})


class TicketForm(Form):
    """The fields every ticket has, plus those of its kind (added in `__init__`)."""

    order = forms.ChoiceField(label=_("Order"), required=False)
    subject = forms.CharField(label=_("Subject"), max_length=200)
    body = forms.CharField(
        label=_("Message"),
        widget=_area(6),
        help_text=_(
            "Secrets (tokens, passwords, private keys, seed phrases) are removed before "
            "anything is stored; the check below shows what would be removed."
        ),
    )
    attachments = MultipleFileField(label=_("Attachments"), help_text=ATTACHMENTS_HELP)

    def __init__(self, *args, kind: str, orders=(), payments=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.kind = kind
        self.fields["order"].choices = [("", _("— no order —"))] + [
            (o.reference, f"{o.reference} · {o.gpu_model} · {o.get_rental_state_display()}")
            for o in orders
        ]
        if kind in {Kind.EXTENSION, Kind.PAYMENT}:
            self.fields["order"].required = True
            self.fields["order"].choices = self.fields["order"].choices[1:]
            self.fields["order"].help_text = _("Required: support answers about this order.")
        else:
            self.fields["order"].help_text = _("If it is about an order, pick it.")
        extra = {
            Kind.PROBLEM: self._problem_fields,
            Kind.EXTENSION: self._extension_fields,
            Kind.PAYMENT: lambda: self._payment_fields(payments),
        }.get(kind)
        if extra:
            # The guided fields go between the subject and the free message.
            ordered = {
                "order": self.fields.pop("order"),
                "subject": self.fields.pop("subject"),
                **extra(),
            }
            ordered.update(self.fields)
            self.fields = ordered

    @staticmethod
    def _problem_fields():
        return {
            "when": forms.ChoiceField(
                label=_("When did it happen?"),
                choices=PROBLEM_WHEN_CHOICES,
                widget=forms.RadioSelect,
                help_text=_(
                    "Loading, the first computation or later iterations point to different "
                    "causes (size of the model, of a batch, or memory kept across steps)."
                ),
            ),
            "launch_command": forms.CharField(
                label=_("Launch command"),
                required=False,
                widget=_area(2),
                help_text=_("The exact command, so support can run the same thing."),
            ),
            "python_version": forms.CharField(
                label=_("Python version"),
                required=False,
                max_length=100,
                help_text=_("From the same interpreter as your program: python -V."),
            ),
            "pytorch_version": forms.CharField(
                label=_("PyTorch version"),
                required=False,
                max_length=100,
                help_text=_("torch.__version__; builds differ between CUDA and ROCm."),
            ),
            "backend_version": forms.CharField(
                label=_("CUDA or ROCm version"),
                required=False,
                max_length=100,
                help_text=_("torch.version.cuda or torch.version.hip."),
            ),
            "driver_version": forms.CharField(
                label=_("Driver version"),
                required=False,
                max_length=100,
                help_text=_("From nvidia-smi or rocm-smi."),
            ),
            "first_error": forms.CharField(
                label=_("First full error"),
                required=False,
                widget=_area(8),
                help_text=_(
                    "The first error with its whole traceback: later errors are often "
                    "consequences of the first."
                ),
            ),
            "minimal_example": forms.CharField(
                label=_("Minimal example"),
                required=False,
                widget=_area(6),
                help_text=_("The smallest code that shows the problem; not your whole dataset."),
            ),
            "input_shapes": forms.CharField(
                label=_("Input shapes"),
                required=False,
                max_length=500,
                help_text=_("e.g. batch 32, 2048 tokens: memory grows with them."),
            ),
        }

    @staticmethod
    def _extension_fields():
        return {
            "extra_days": forms.CharField(
                label=_("Extra days"),
                required=False,
                max_length=3,
                widget=forms.TextInput(attrs={"inputmode": "numeric"}),
                help_text=_("How many days more you need; support prices the offer from it."),
            ),
            "configuration": forms.CharField(
                label=_("Or a different configuration"),
                required=False,
                widget=_area(2),
                help_text=_("If you need more units or another GPU instead, say so here."),
            ),
            "deadline": forms.DateField(
                label=_("Deadline"),
                widget=forms.DateInput(attrs={"type": "date"}),
                help_text=_(
                    "By when you need an answer. Keep preparing your exports for the current "
                    "end date until the change is confirmed in your tracking."
                ),
            ),
        }

    @staticmethod
    def _payment_fields(payments):
        return {
            "payment": forms.ChoiceField(
                label=_("Which payment"),
                required=False,
                choices=[("", _("— choose —"))]
                + [
                    (
                        str(p.pk),
                        f"{p.order.reference} · {p.method} · "
                        f"{p.created_at:%Y-%m-%d %H:%M} UTC · {intent_state(p).label}",
                    )
                    for p in payments
                ],
                help_text=_("The instructions you paid: each payment has its own address."),
            ),
            "sent": forms.CharField(
                label=_("What you sent"),
                required=False,
                max_length=500,
                help_text=_("The amount and asset, as your wallet shows them."),
            ),
            "network": forms.CharField(
                label=_("From which network"),
                required=False,
                max_length=100,
                help_text=_("A transfer on another network is not equivalent: tell us which."),
            ),
        }

    def kind_fields(self) -> dict:
        """The guided answers, as the service takes them."""
        names = {
            Kind.PROBLEM: (
                "when",
                "launch_command",
                "python_version",
                "pytorch_version",
                "backend_version",
                "driver_version",
                "first_error",
                "minimal_example",
                "input_shapes",
            ),
            Kind.EXTENSION: ("extra_days", "configuration", "deadline"),
            Kind.PAYMENT: ("payment", "sent", "network"),
        }.get(self.kind, ())
        return {n: self.cleaned_data.get(n) for n in names if self.cleaned_data.get(n)}


class ReplyForm(Form):
    body = forms.CharField(
        label=_("Your reply"),
        widget=_area(5),
        help_text=_("Secrets are removed before anything is stored."),
    )
    attachments = MultipleFileField(label=_("Attachments"), help_text=ATTACHMENTS_HELP)


class StaffReplyForm(Form):
    canned = forms.ChoiceField(label=_("Canned answer"), required=False)
    body = forms.CharField(label=_("Reply"), widget=_area(6))
    status = forms.ChoiceField(
        label=_("Then"),
        choices=[
            (status, STAFF_STATUS_LABELS[status])
            for status in (Status.ANSWERED, Status.WAITING, Status.CLOSED)
        ],
        initial=Status.ANSWERED,
    )


class StatusForm(Form):
    status = forms.ChoiceField(label=_("Status"), choices=STAFF_STATUS_CHOICES)


class OfferForm(Form):
    days = forms.CharField(label=_("Extra days"), max_length=3)
    price_usd = forms.CharField(
        label=_("Price (USD)"),
        required=False,
        max_length=12,
        help_text=_("Empty: the price sheet's price for these days."),
    )
    valid_until = forms.DateTimeField(
        label=_("Valid until (UTC)"),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )


class DeclineForm(Form):
    reason = forms.CharField(label=_("Reason for the customer"), widget=_area(2))


class AccessRequestForm(Form):
    """The signed-out "I can't sign in" request: what lets support recognise the account."""

    email = forms.EmailField(
        label=_("Email of your account"),
        max_length=254,
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
        help_text=_("Support answers at this address, and only there."),
    )
    name = forms.CharField(
        label=_("Your name"),
        max_length=300,
        widget=forms.TextInput(attrs={"autocomplete": "name"}),
    )
    references = forms.CharField(
        label=_("Orders and payments you remember"),
        required=False,
        max_length=2000,
        widget=_area(3),
        help_text=_(
            "Order references (e.g. KD-7Q2M-4XKD), dates, amounts, the coin and network you "
            "paid with. The more you remember, the sooner support can recognise the account."
        ),
    )
    body = forms.CharField(
        label=_("Message"),
        max_length=5000,
        widget=_area(4),
        help_text=_(
            "What happens when you sign in. Never write a password, key or seed phrase: "
            "anything that looks like one is removed before the message is stored."
        ),
    )


class AccessReplyForm(Form):
    body = forms.CharField(
        label=_("Reply (sent by e-mail)"),
        widget=_area(6),
        help_text=_(
            "Never ask for or confirm a password. Until ownership is checked, say nothing "
            "about whether the address has an account."
        ),
    )
    status = forms.ChoiceField(
        label=_("Then"),
        choices=[("answered", _("Answered")), ("closed", _("Closed"))],
        initial="answered",
    )
