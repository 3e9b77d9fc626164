from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the background worker (huey consumer with the periodic tasks)."

    def add_arguments(self, parser):
        parser.add_argument("--workers", type=int, default=None, help="Worker threads.")

    def handle(self, *args, workers=None, **options):
        extra = ["--workers", str(workers)] if workers else []
        call_command("run_huey", *extra)
