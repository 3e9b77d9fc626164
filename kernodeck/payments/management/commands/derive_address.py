from django.core.management.base import BaseCommand, CommandError

from kernodeck.payments.wallets import (
    DERIVED_CHAINS,
    MAX_INDEX,
    WalletConfigError,
    derive_address,
    parse_public_key,
)


class Command(BaseCommand):
    help = (
        "Print the receive address INDEX of an account's extended public key, so an operator "
        "can check it against their own wallet before going live. Needs no database."
    )
    requires_system_checks = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument(
            "--network", required=True, choices=[chain.value for chain in DERIVED_CHAINS]
        )
        parser.add_argument("--xpub", required=True, help="The account's extended public key.")
        parser.add_argument("--index", required=True, type=int, help="Receive address index.")
        parser.add_argument("--testnet", action="store_true", help="Test-network formats.")
        parser.add_argument(
            "--regtest", action="store_true", help="Regtest formats (bcrt1…, rltc1…)."
        )

    def handle(self, *args, network, xpub, index, testnet, regtest, **options):
        testnet = testnet or regtest  # regtest uses the testnet keys
        if not 0 <= index < MAX_INDEX:
            raise CommandError(f"--index must be from 0 to {MAX_INDEX - 1}.")
        try:
            key = parse_public_key(network, xpub, testnet=testnet, source="--xpub")
        except WalletConfigError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(derive_address(network, key, index, testnet=testnet, regtest=regtest))
