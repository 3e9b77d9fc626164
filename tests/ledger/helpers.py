from decimal import Decimal

from kernodeck.ledger import services
from kernodeck.ledger.models import EntryKind
from kernodeck.payments import watching
from kernodeck.payments.chains.base import ObservedTransfer


def pay_topup(intent, *, amount_base=None, txid="ab" * 32):
    """What a watcher would do once the top-up's transfer is confirmed."""
    transfer = ObservedTransfer(
        network=intent.chain,
        txid=txid,
        index=0,
        address=intent.address,
        asset=intent.method.asset,
        amount_base=intent.amount_units if amount_base is None else amount_base,
        confirmations=100,
        reference=intent.solana_reference,
    )
    watching.transfer_record(transfer, intent=intent)
    return watching.payment_intent_reconcile(intent_id=intent.pk)


def funded_account(account, usd, operator):
    """Put `usd` on an account with a support adjustment (fastest way in tests)."""
    return services.balance_adjust(
        account=account, amount_usd=Decimal(usd), actor=operator, reason="test funding"
    )


__all__ = ["EntryKind", "funded_account", "pay_topup"]
