from django.core.management.base import BaseCommand

from kernodeck.demo.services import demo_seed


class Command(BaseCommand):
    help = "Load the demo data (operator and customer logins). Safe to run again."

    def handle(self, *args, **options):
        for login in demo_seed():
            if login.created:
                self.stdout.write(
                    f"Created demo {login.role}: {login.email}  password: {login.password}"
                )
            else:
                self.stdout.write(f"Demo {login.role} already exists: {login.email}")
