from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kernodeck.core import clock
from kernodeck.core.backups import BackupError, database_backup, private_folder


class Command(BaseCommand):
    help = "Write a consistent backup of the database (SQLite backup API or pg_dump)."

    def add_arguments(self, parser):
        parser.add_argument(
            "destination",
            nargs="?",
            help="File to write, mode 0600 (default: var/backups/kernodeck-<UTC time>."
            "<sqlite3|dump>, in a 0700 folder).",
        )

    def handle(self, *args, destination=None, **options):
        from django.conf import settings
        from django.db import connection

        try:
            if destination is None:
                suffix = "sqlite3" if connection.vendor == "sqlite" else "dump"
                stamp = clock.now().strftime("%Y%m%dT%H%M%SZ")
                # Kernodeck's own folder: 0700 even if an older version made it 0755. A
                # folder named on the command line is the operator's and keeps its mode.
                folder = private_folder(settings.VAR_DIR / "backups")
                folder.chmod(0o700)
                destination = folder / f"kernodeck-{stamp}.{suffix}"
            path = database_backup(destination=Path(destination))
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"The backup could not be written: {exc}") from None
        self.stdout.write(self.style.SUCCESS(f"Backup written to {path}"))
