from django.db import migrations

# A frozen copy of kernodeck.payments.methods.METHODS at the time of this migration:
# migrations must not import code that may change later.
METHODS = [
    # code, asset, network, chain, decimals, precision, confirmations
    ("btc-bitcoin", "BTC", "Bitcoin", "bitcoin", 8, 8, 2),
    ("eth-ethereum", "ETH", "Ethereum", "ethereum", 18, 6, 12),
    ("usdt-ethereum", "USDT", "Ethereum (ERC-20)", "ethereum", 6, 2, 12),
    ("usdc-ethereum", "USDC", "Ethereum (ERC-20)", "ethereum", 6, 2, 12),
    ("trx-tron", "TRX", "Tron", "tron", 6, 2, 19),
    ("usdt-tron", "USDT", "Tron (TRC-20)", "tron", 6, 2, 19),
    ("sol-solana", "SOL", "Solana", "solana", 9, 6, 32),
    ("ltc-litecoin", "LTC", "Litecoin", "litecoin", 8, 8, 6),
]


def create_methods(apps, schema_editor):
    PaymentMethod = apps.get_model("payments", "PaymentMethod")
    for order, (code, asset, network, chain, decimals, precision, confirmations) in enumerate(
        METHODS
    ):
        PaymentMethod.objects.get_or_create(
            code=code,
            defaults={
                "asset": asset,
                "network": network,
                "chain": chain,
                "decimals": decimals,
                "precision": precision,
                "confirmations": confirmations,
                "enabled": True,
                "sort_order": order,
            },
        )


class Migration(migrations.Migration):
    dependencies = [("payments", "0001_initial")]

    operations = [migrations.RunPython(create_methods, migrations.RunPython.noop)]
