from django.core.management.base import BaseCommand, CommandError

from kernodeck.core.errors import ServiceError
from kernodeck.payments.services import rate_record_manual


class Command(BaseCommand):
    help = "Record a manual exchange rate: kernodeck set_rate ASSET USD_PER_COIN (e.g. BTC 97000)."

    def add_arguments(self, parser):
        parser.add_argument("asset")
        parser.add_argument("usd_per_coin")

    def handle(self, *args, asset, usd_per_coin, **options):
        try:
            rate = rate_record_manual(asset=asset, usd_per_coin=usd_per_coin)
        except ServiceError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"{rate.asset} = {rate.usd_per_coin.normalize():f} USD (manual, "
            f"{rate.fetched_at:%Y-%m-%d %H:%M:%S} UTC)"
        )
