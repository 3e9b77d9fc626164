"""System checks of the payments app (every `kernodeck` command runs them)."""

from django.core.checks import Error, register

from kernodeck.payments import registry


@register()
def regtest_contracts_check(app_configs, **kwargs):
    """KERNODECK_ETHEREUM_USDT_CONTRACT / _USDC_CONTRACT: regtest only, 0x addresses."""
    return [
        Error(
            problem,
            hint="Leave it unset to use the mainnet address on the dev chain.",
            id="payments.E001",
        )
        for problem in registry.contract_setting_problems()
    ]
