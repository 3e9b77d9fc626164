from django import forms
from django.utils.functional import lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from kernodeck.accounts.validators import PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH
from kernodeck.core.forms import Form


def _password_help() -> str:
    return gettext("%(min)d to %(max)d characters. A sentence you can remember works well.") % {
        "min": PASSWORD_MIN_LENGTH,
        "max": PASSWORD_MAX_LENGTH,
    }


PASSWORD_HELP = lazy(_password_help, str)()


class RegistrationForm(Form):
    first_name = forms.CharField(label=_("First name"), max_length=150)
    last_name = forms.CharField(label=_("Last name"), max_length=150)
    email = forms.EmailField(label=_("Email"), max_length=254)
    # No max_length here: the service's validator refuses 129+ characters with the rule's words.
    password = forms.CharField(
        label=_("Password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=PASSWORD_HELP,
    )

    field_order = ["first_name", "last_name", "email", "password"]


class SignInForm(Form):
    email = forms.EmailField(
        label=_("Email"),
        widget=forms.EmailInput(attrs={"autocomplete": "email", "autofocus": True}),
    )
    password = forms.CharField(
        label=_("Password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )


class ProfileForm(Form):
    first_name = forms.CharField(label=_("First name"), max_length=150)
    last_name = forms.CharField(label=_("Last name"), max_length=150)


class PasswordChangeForm(Form):
    current_password = forms.CharField(
        label=_("Current password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )
    new_password = forms.CharField(
        label=_("New password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text=PASSWORD_HELP,
    )
    keep_api_tokens = forms.BooleanField(
        label=_("Keep my API tokens working"),
        required=False,
        help_text=_(
            "By default a password change also revokes every API token of the account. "
            "Tick this only if you change the password for another reason than a leak."
        ),
    )


class ApiTokenForm(Form):
    name = forms.CharField(
        label=_("Token name"),
        max_length=80,
        help_text=_("Where it will be used, e.g. “laptop scripts”."),
    )


class SshKeyForm(Form):
    public_key = forms.CharField(
        label=_("Public key"),
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text=_("The content of your .pub file: Ed25519, ECDSA or RSA of 3072 bits or more."),
    )
    name = forms.CharField(
        label=_("Name (optional)"),
        max_length=80,
        required=False,
        help_text=_("Defaults to the key's comment."),
    )


class NewPasswordForm(Form):
    new_password = forms.CharField(
        label=_("New password"),
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password", "autofocus": True}),
        help_text=PASSWORD_HELP,
    )
