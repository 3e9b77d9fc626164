from django.contrib.auth import get_user_model


def lock_account(account_id: int):
    """Lock the account row: the first lock of every money path (see "Lock order" in
    docs/architecture.md). `no_key`: rows that only reference the account (ledger entries,
    audit events, intents) can still be inserted by others meanwhile."""
    return get_user_model().objects.select_for_update(no_key=True).get(pk=account_id)
