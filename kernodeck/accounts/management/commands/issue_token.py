from django.core.management.base import BaseCommand, CommandError

from kernodeck.accounts import services
from kernodeck.accounts.models import User, normalize_email
from kernodeck.core.errors import ServiceError


class Command(BaseCommand):
    help = "Create an API token for an account and print it (shown once), e.g. for scripts."

    def add_arguments(self, parser):
        parser.add_argument("email")
        parser.add_argument("--name", required=True, help="What the token is for.")

    def handle(self, *args, email, name, **options):
        user = User.objects.filter(email=normalize_email(email), is_active=True).first()
        if user is None:
            raise CommandError(f"No active account with the email {email!r}.")
        try:
            _token, raw = services.api_token_create(user=user, name=name)
        except ServiceError as error:
            raise CommandError(error.message) from None
        self.stdout.write(raw)
