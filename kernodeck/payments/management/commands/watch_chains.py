import logging
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection
from huey.exceptions import TaskLockedException

from kernodeck.payments import tasks, watching
from kernodeck.payments.chains.adapters import NETWORKS, api_url_shown

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Watch the configured chains and reconcile payments. --once: one full pass, then "
        "exit 0 (for cron); otherwise a pass every KERNODECK_WATCH_INTERVAL seconds."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="One pass, then exit.")

    def handle(self, *args, once=False, **options):
        for network in NETWORKS:  # say whom this will contact, before contacting anyone
            self.stdout.write(f"{network}: {api_url_shown(network) or 'no chain API configured'}")
        while True:
            try:
                # The queue's lock: never a pass beside the workers' (or another command's).
                with tasks.WATCH_LOCK:
                    reports = watching.watch_all()
            except TaskLockedException:
                self.stdout.write("skipped: another watcher pass is running")
                reports = []
            except Exception:
                # watch_all contains each network's failures; what still escapes (the
                # database gone, say) must not stop a long-running watcher for good.
                if once:
                    raise
                logger.exception("watcher pass failed; the next pass follows as usual")
                reports = []
            for report in reports:
                self.stdout.write(" ".join(f"{key}={value}" for key, value in report.items()))
            if once:
                return
            time.sleep(settings.KERNODECK_WATCH_INTERVAL)
            if not connection.in_atomic_block:
                # A connection the database dropped since the last pass is reopened, not
                # reused (never inside a transaction: a test's, or a caller's).
                close_old_connections()
