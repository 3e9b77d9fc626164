"""Row locks of support, in the documented money lock order (docs/architecture.md): the
customer's account first, then the extension; the order comes after, through
`orders.locks.lock_order`."""

from kernodeck.accounts.locks import lock_account
from kernodeck.support.models import Extension


def lock_extension(extension_id) -> Extension:
    """Lock the extension's account (the customer who pays it), then the extension.

    Paying from the balance, creating crypto instructions and settling a confirmed
    payment all queue on the account first, like every other money path, so none of them
    waits on another in a cycle.
    """
    owner_id = Extension.objects.values_list("order__owner_id", flat=True).get(pk=extension_id)
    account = lock_account(owner_id)
    extension = (
        Extension.objects.select_for_update(no_key=True, of=("self",))
        .select_related("order")
        .get(pk=extension_id)
    )
    extension.order.owner = account  # just read under its lock: callers need not read it again
    return extension
