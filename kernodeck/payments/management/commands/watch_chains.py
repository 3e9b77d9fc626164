import logging
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections, connection

from kernodeck.payments import tasks, watching
from kernodeck.payments.chains.adapters import NETWORKS, api_url_shown, configured_networks

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Watch the configured chains and reconcile payments. --once: one pass of every "
        "network, then exit 0 (for cron); otherwise a pass every KERNODECK_WATCH_INTERVAL "
        "seconds. Each network is watched on its own thread under its own lock, so a slow or "
        "hung chain API delays only its own network."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="One pass, then exit.")

    def handle(self, *args, once=False, **options):
        for network in NETWORKS:  # say whom this will contact, before contacting anyone
            self.stdout.write(f"{network}: {api_url_shown(network) or 'no chain API configured'}")
        running: dict[str, threading.Thread] = {}
        # Inside a caller's transaction (a test's) the passes must see what it holds, which
        # other connections cannot: they run here, one after another (each still bounded by
        # its pass deadline). Otherwise each network has a thread, and its own connection.
        inline = connection.in_atomic_block
        while True:
            results: dict[str, object] = {}
            started = []
            for network in configured_networks():
                previous = running.get(network)
                if previous is not None and previous.is_alive():
                    # Its last pass still runs (within its deadline): it holds only itself.
                    self.stdout.write(f"network={network} skipped=its previous pass still runs")
                    continue
                started.append(network)
                if inline:
                    self._pass(network, results, not once, close=False)
                    continue
                thread = threading.Thread(
                    target=self._pass,
                    args=(network, results, not once),
                    name=f"watch-{network}",
                    daemon=True,
                )
                running[network] = thread
                thread.start()
            if once and not inline:
                for network in started:
                    running[network].join()
            try:
                watching.payment_intents_expire()
            except Exception:
                if once:
                    raise
                logger.exception("expiry of payment instructions failed")
            if once:
                for network in started:  # in the networks' order, whichever ended first
                    result = results.get(network)
                    if isinstance(result, BaseException):
                        raise result
                    self._write(network, result)
                return
            time.sleep(settings.KERNODECK_WATCH_INTERVAL)
            if not connection.in_atomic_block:
                # A connection the database dropped since the last pass is reopened, not
                # reused (never inside a transaction: a test's, or a caller's).
                close_old_connections()

    def _pass(self, network: str, results: dict, write: bool, *, close: bool = True) -> None:
        """One pass over `network` under its lock; on a thread of its own, the thread's
        connection is closed after it (`close`)."""
        try:
            # watch_network_isolated contains the network's failures; what still escapes
            # (the database gone, say) must not stop a long-running watcher for good.
            results[network] = tasks.watch_exclusively(network)
        except Exception as error:
            logger.exception("%s watcher pass failed; the next pass follows as usual", network)
            results[network] = error
        finally:
            if close:
                connection.close()
        if write and not isinstance(results[network], BaseException):
            self._write(network, results[network])

    def _write(self, network: str, report) -> None:
        if report is None:
            self.stdout.write(f"network={network} skipped=another watcher pass is running")
            return
        self.stdout.write(" ".join(f"{key}={value}" for key, value in report.items()))
