from django.core.management.base import BaseCommand

from kernodeck.demo.services import demo_seed, demo_seed_catalog, demo_seed_payment_methods


class Command(BaseCommand):
    help = "Load the demo data (catalog, operator and customer logins). Safe to run again."

    def handle(self, *args, **options):
        demo_seed_payment_methods()
        created = demo_seed_catalog()
        self.stdout.write(f"Demo catalog: {created} offer(s) created.")
        for login in demo_seed():
            if login.created:
                self.stdout.write(
                    f"Created demo {login.role}: {login.email}  password: {login.password}"
                )
            else:
                self.stdout.write(f"Demo {login.role} already exists: {login.email}")
