from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

PASSWORD_MIN_LENGTH = 15
PASSWORD_MAX_LENGTH = 128


class PasswordLengthValidator:
    """Passwords are 15 to 128 characters long (the FAQ's rule), inclusive."""

    def __init__(self, min_length=PASSWORD_MIN_LENGTH, max_length=PASSWORD_MAX_LENGTH):
        self.min_length = min_length
        self.max_length = max_length

    def message(self):
        return _("Your password must be %(min)d to %(max)d characters long.") % {
            "min": self.min_length,
            "max": self.max_length,
        }

    def validate(self, password, user=None):
        if not self.min_length <= len(password) <= self.max_length:
            raise ValidationError(self.message(), code="password_length")

    def get_help_text(self):
        return self.message()
