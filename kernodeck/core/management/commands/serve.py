"""`kernodeck serve`: the production web server (gunicorn) with defaults that fit Kernodeck."""

import os

from django.core.management.base import BaseCommand, CommandError

from kernodeck.observability import multiprocess


def default_workers() -> int:
    """gunicorn's rule of thumb, two per core plus one, capped for small database pools."""
    return min(2 * (os.cpu_count() or 1) + 1, 12)


# A worker is replaced after about this many requests: a guard against slow memory growth
# (a leak in a library, fragmentation), not a throughput tax. At 5 000 requests the workers
# of a busy 2-core machine each restarted about once a second under load; at 100 000 each one
# lives minutes even at thousands of requests a second, which still bounds any growth.
DEFAULT_MAX_REQUESTS = 100_000


def worker_recycling(environ=os.environ) -> tuple[int, int]:
    """gunicorn's `max_requests` and `max_requests_jitter` from KERNODECK_WEB_MAX_REQUESTS
    (default 100 000; 0 turns recycling off). The jitter, a tenth of it, keeps the workers
    from restarting all at once."""
    raw = environ.get("KERNODECK_WEB_MAX_REQUESTS", "").strip()
    try:
        max_requests = int(raw) if raw else DEFAULT_MAX_REQUESTS
    except ValueError:
        max_requests = -1
    if max_requests < 0:
        raise CommandError(
            f"KERNODECK_WEB_MAX_REQUESTS must be a whole number of requests (0: off), not {raw!r}."
        )
    return max_requests, max_requests // 10


class Command(BaseCommand):
    help = "Run the web application under gunicorn (the server to use in production)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--bind",
            default=os.environ.get("KERNODECK_BIND", "127.0.0.1:8000"),
            help="Address to listen on, HOST:PORT or unix:PATH (default KERNODECK_BIND or "
            "127.0.0.1:8000).",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=int(os.environ.get("KERNODECK_WEB_WORKERS", 0)) or default_workers(),
            help="Worker processes (default: 2 per core + 1, at most 12).",
        )
        parser.add_argument(
            "--threads", type=int, default=4, help="Threads per worker (default 4)."
        )
        parser.add_argument(
            "--timeout", type=int, default=30, help="Seconds before a stuck worker is replaced."
        )
        parser.add_argument(
            "--no-access-log", action="store_true", help="Do not log every request."
        )

    def handle(self, *args, bind, workers, threads, timeout, no_access_log, **options):
        try:
            from gunicorn.app.base import BaseApplication
        except ImportError as exc:  # pragma: no cover - gunicorn is a runtime dependency
            raise CommandError("gunicorn is not installed; reinstall Kernodeck.") from exc
        if workers < 1 or threads < 1 or timeout < 1:
            raise CommandError("--workers, --threads and --timeout must be at least 1.")

        max_requests, jitter = worker_recycling()
        options = {
            "bind": bind,
            "workers": workers,
            "threads": threads,
            "worker_class": "gthread",
            "timeout": timeout,
            "graceful_timeout": timeout,
            "keepalive": 5,
            # Replace workers now and then so a slow leak never grows without bound.
            "max_requests": max_requests,
            "max_requests_jitter": jitter,
            "accesslog": None if no_access_log else "-",
            "errorlog": "-",
            # The TLS proxy in front sets X-Forwarded-Proto; trust it only from these.
            "forwarded_allow_ips": os.environ.get("KERNODECK_FORWARDED_ALLOW_IPS", "127.0.0.1"),
            "proc_name": "kernodeck-web",
            # Metrics summed over every worker (prometheus_client's multiprocess mode).
            "child_exit": multiprocess.worker_exited,
        }
        metrics_dir = multiprocess.directory_prepare()

        class Server(BaseApplication):
            def load_config(self):
                for key, value in options.items():
                    self.cfg.set(key, value)

            def load(self):
                from config.wsgi import application

                return application

        self.stdout.write(
            f"Kernodeck web on {bind}: {workers} workers x {threads} threads (gunicorn), "
            + (
                f"each replaced after about {max_requests} requests; "
                if max_requests
                else "never replaced; "
            )
            + f"metrics in {metrics_dir}."
        )
        Server().run()
