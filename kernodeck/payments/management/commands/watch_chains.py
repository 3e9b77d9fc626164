import time

from django.conf import settings
from django.core.management.base import BaseCommand

from kernodeck.payments import watching


class Command(BaseCommand):
    help = (
        "Watch the configured chains and reconcile payments. --once: one full pass, then "
        "exit 0 (for cron); otherwise a pass every KERNODECK_WATCH_INTERVAL seconds."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="One pass, then exit.")

    def handle(self, *args, once=False, **options):
        while True:
            for report in watching.watch_all():
                self.stdout.write(" ".join(f"{key}={value}" for key, value in report.items()))
            if once:
                return
            time.sleep(settings.KERNODECK_WATCH_INTERVAL)
