"""Row locks of the ledger, in the documented order (docs/architecture.md): the account,
then the top-up."""

from kernodeck.accounts.locks import lock_account
from kernodeck.ledger.models import TopUp


def lock_topup(topup_id) -> TopUp:
    """Lock the top-up's account, then the top-up."""
    account_id = TopUp.objects.values_list("account_id", flat=True).get(pk=topup_id)
    account = lock_account(account_id)
    topup = TopUp.objects.select_for_update(no_key=True).get(pk=topup_id)
    topup.account = account  # just read under its lock: callers need not read it again
    return topup
