from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kernodeck.core import clock
from kernodeck.core.backups import BackupError, database_backup


class Command(BaseCommand):
    help = "Write a consistent backup of the database (SQLite backup API or pg_dump)."

    def add_arguments(self, parser):
        parser.add_argument(
            "destination",
            nargs="?",
            help="File to write (default: var/backups/kernodeck-<UTC time>.<sqlite3|dump>).",
        )

    def handle(self, *args, destination=None, **options):
        from django.conf import settings
        from django.db import connection

        if destination is None:
            suffix = "sqlite3" if connection.vendor == "sqlite" else "dump"
            stamp = clock.now().strftime("%Y%m%dT%H%M%SZ")
            destination = settings.VAR_DIR / "backups" / f"kernodeck-{stamp}.{suffix}"
        try:
            path = database_backup(destination=Path(destination))
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"Backup written to {path}"))
