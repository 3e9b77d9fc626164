from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from kernodeck.demo.services import demo_seed, demo_seed_catalog, demo_seed_payment_methods


class Command(BaseCommand):
    help = "Load the demo data (catalog, operator and customer logins). Safe to run again."

    def handle(self, *args, **options):
        # Demo logins with known passwords and an operator account must never appear in a
        # real deployment by mistake.
        if not settings.KERNODECK_DEMO:
            raise CommandError(
                "seed_demo only runs in demo mode: it creates logins whose passwords are "
                "written to var/demo-logins.json. Use `kernodeck demo`, or set "
                "KERNODECK_DEMO=on for a rehearsal database. Nothing was changed."
            )
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
