from django.core.management.base import BaseCommand

from kernodeck.payments.services import rates_refresh


class Command(BaseCommand):
    help = "Fetch exchange rates now from the configured providers and print them."

    def handle(self, *args, **options):
        stored, errors = rates_refresh()
        for rate in stored:
            self.stdout.write(
                f"{rate.asset:5} {rate.usd_per_coin.normalize():f} USD ({rate.source})"
            )
        for error in errors:
            self.stderr.write(f"provider error: {error}")
        if not stored:
            self.stderr.write("No rate could be fetched.")
