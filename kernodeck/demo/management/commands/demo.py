import contextlib
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

# The signals that ask the demo to stop: a service manager, `kill`, Ctrl-C, a closed terminal.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_SECONDS = 10  # how long the demo's processes get to stop before they are killed


class StopRequested(Exception):
    """A stop signal arrived; raised at the next step of the start-up or watch loop."""


class Command(BaseCommand):
    help = (
        "Migrate, load the demo data and run web + worker on http://127.0.0.1:8000, with "
        "loopback chain simulators for every payment network. SIGTERM, SIGINT (Ctrl-C) and "
        "SIGHUP stop all of them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=DEMO_PORT)

    def handle(self, *args, port, **options):
        if not settings.KERNODECK_DEMO:
            raise CommandError("Run the demo as `kernodeck demo` so demo mode is switched on.")
        # A signal only records the request; the start-up steps and the watch loop act on it,
        # so a process is never left half started. Each process the demo starts leads its
        # own process group, so stopping it reaches its own children (gunicorn's workers).
        self._requested: list[int] = []
        self._children: dict[str, subprocess.Popen] = {}
        previous = {
            signum: signal.signal(signum, lambda signum, _frame: self._requested.append(signum))
            for signum in STOP_SIGNALS
        }
        try:
            ended = self._run(port)
        except StopRequested:
            ended = None
        finally:
            if self._requested:
                name = signal.Signals(self._requested[0]).name
                self.stdout.write(f"Stopping the demo ({name}) …")
            self._stop_children()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if ended:
            raise CommandError(
                f"The demo stopped because its {ended} did; see the messages above."
            )
        self.stdout.write("Demo stopped.")

    def _check_stop(self) -> None:
        if self._requested:
            raise StopRequested

    def _start(self, name: str, command: list[str], **options) -> subprocess.Popen:
        self._check_stop()
        process = subprocess.Popen(command, start_new_session=True, **options)
        self._children[name] = process
        return process

    def _run(self, port: int) -> str | None:
        """Start everything and watch it; return the name of a process that quit alone."""
        call_command("migrate", interactive=False, verbosity=0)
        self._check_stop()
        call_command("seed_demo", stdout=self.stdout)

        command = [sys.executable, "-m", "kernodeck"]
        simulator_url = self._start_simulator()
        # Every watcher reads the simulator, unless a chain URL was set explicitly.
        env = {**simulator_environment(simulator_url), **os.environ}
        # The production server, so the demo behaves (and performs) like a real shop.
        bind = f"{DEMO_HOST}:{port}"
        serve = [*command, "serve", "--bind", bind, "--workers", "2", "--no-access-log"]
        self._start("web server", serve, env=env)
        self._start("worker", [*command, "worker"], env=env)
        url = f"http://{DEMO_HOST}:{port}/"
        self.stdout.write(self.style.SUCCESS(f"\nKernodeck demo is starting on {url}"))
        for email, password in demo_logins().items():
            self.stdout.write(f"  login  {email}  {password}")
        self.stdout.write(f"  back-office: {url}backoffice/   API docs: {url}api/v1/docs")
        self.stdout.write(
            f"  chain simulator: {simulator_url} (every payment page has a panel to pay it)"
        )
        self.stdout.write("Press Ctrl-C to stop web, worker and chain simulator.\n")

        while True:
            self._check_stop()
            for name, child in self._children.items():
                if child.poll() is not None:
                    self.stderr.write(
                        f"The demo's {name} stopped on its own (exit status "
                        f"{child.returncode}); stopping the rest of the demo."
                    )
                    return name
            time.sleep(0.2)

    def _stop_children(self) -> None:
        """Ask every process group the demo started to stop; kill what is left after the
        grace period."""
        for child in self._children.values():
            signal_group(child, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        for name, child in self._children.items():
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.stderr.write(f"The {name} did not stop in {GRACE_SECONDS} s; killing it.")
        # Whatever is still running in a group (the leader, or a child it left) goes now.
        for child in self._children.values():
            signal_group(child, signal.SIGKILL)
            child.wait()

    def _start_simulator(self) -> str:
        """Start the chain simulator on a free loopback port; wait for the port it writes."""
        folder = var_dir()
        port_file = folder / SIMULATOR_PORT_FILE
        port_file.unlink(missing_ok=True)  # a stale one from a demo that was killed
        process = self._start(
            "chain simulator",
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
            ],
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            self._check_stop()
            port = port_file.read_text().strip() if port_file.exists() else ""
            if port.isdigit():
                return f"http://{DEMO_HOST}:{port}"
            time.sleep(0.1)
        raise CommandError("The demo's chain simulator did not start; see the messages above.")


def signal_group(process: subprocess.Popen, signum: int) -> None:
    """Send `signum` to the process group `process` leads, if any of it is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)
