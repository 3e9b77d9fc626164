from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from kernodeck.core.backups import BackupError, database_restore


class Command(BaseCommand):
    help = "Replace the database's content with a backup. Stop web and workers first."

    def add_arguments(self, parser):
        parser.add_argument("source", help="A file written by `kernodeck backup`.")
        parser.add_argument(
            "--yes",
            action="store_true",
            help="Confirm that every current row is to be replaced by the backup's.",
        )

    def handle(self, *args, source, yes, **options):
        if not yes:
            raise CommandError(
                "Restoring replaces every row of the current database with the backup's. "
                "Stop the web processes and workers, then run again with --yes."
            )
        try:
            database_restore(source=Path(source))
        except BackupError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(self.style.SUCCESS(f"Database restored from {source}"))
