import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from kernodeck.demo.profile import (
    DEMO_HOST,
    DEMO_PORT,
    SIMULATOR_PORT_FILE,
    SIMULATOR_STATE,
    simulator_environment,
    var_dir,
)
from kernodeck.demo.services import demo_logins


class Command(BaseCommand):
    help = (
        "Migrate, load the demo data and run web + worker on http://127.0.0.1:8000, with "
        "loopback chain simulators for every payment network."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=DEMO_PORT)

    def handle(self, *args, port, **options):
        if not settings.KERNODECK_DEMO:
            raise CommandError("Run the demo as `kernodeck demo` so demo mode is switched on.")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("seed_demo", stdout=self.stdout)

        command = [sys.executable, "-m", "kernodeck"]
        simulator, simulator_url = self._start_simulator()
        # Every watcher reads the simulator, unless a chain URL was set explicitly.
        env = {**simulator_environment(simulator_url), **os.environ}
        children = [
            simulator,
            # The production server, so the demo behaves (and performs) like a real shop.
            subprocess.Popen(
                [
                    *command,
                    "serve",
                    "--bind",
                    f"{DEMO_HOST}:{port}",
                    "--workers",
                    "2",
                    "--no-access-log",
                ],
                env=env,
            ),
            subprocess.Popen([*command, "worker"], env=env),
        ]
        url = f"http://{DEMO_HOST}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"\nKernodeck demo is starting on {url}"))
        for email, password in demo_logins().items():
            self.stdout.write(f"  login  {email}  {password}")
        self.stdout.write(f"  back-office: {url}backoffice/   API docs: {url}api/v1/docs")
        self.stdout.write(
            f"  chain simulator: {simulator_url} (every payment page has a panel to pay it)"
        )
        self.stdout.write("Press Ctrl-C to stop web, worker and chain simulator.\n")

        stopping = False

        def stop(*_):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            for child in children:
                if child.poll() is None:
                    child.terminate()
            deadline = time.monotonic() + 10
            for child in children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
        failed = [
            c for c in children if c.returncode not in (0, -signal.SIGINT, -signal.SIGTERM, None)
        ]
        if failed and not stopping:
            raise CommandError("A demo process stopped unexpectedly; see the messages above.")
        self.stdout.write("Demo stopped.")

    def _start_simulator(self) -> tuple[subprocess.Popen, str]:
        """Start the chain simulator on a free loopback port; wait for the port it writes."""
        folder = var_dir()
        port_file = folder / SIMULATOR_PORT_FILE
        port_file.unlink(missing_ok=True)  # a stale one from a demo that was killed
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernodeck.demo.simulator",
                "--state",
                str(folder / SIMULATOR_STATE),
                "--port-file",
                str(port_file),
                "--host",
                DEMO_HOST,
            ]
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            port = port_file.read_text().strip() if port_file.exists() else ""
            if port.isdigit():
                return process, f"http://{DEMO_HOST}:{port}"
            time.sleep(0.1)
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=10)
        raise CommandError("The demo's chain simulator did not start; see the messages above.")
