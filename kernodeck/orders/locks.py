"""Row locks of the orders domain. Always in the documented order: account, top-up,
order, intents, offer, address counter (docs/architecture.md, "Lock order")."""

from kernodeck.accounts.locks import lock_account
from kernodeck.catalog.models import Offer
from kernodeck.orders.models import Order


def lock_offer(offer_id: int) -> Offer:
    """Lock the offer row: every capacity count of the same offer queues behind it."""
    return Offer.objects.select_for_update(no_key=True).get(pk=offer_id)


def lock_order(order_id: int, *, owner_id: int | None = None) -> Order:
    """Lock the order's owner account, then the order (the account always comes first).

    An order's owner never changes: a caller that read the order may pass its `owner_id`.
    """
    if owner_id is None:
        owner_id = Order.objects.values_list("owner_id", flat=True).get(pk=order_id)
    account = lock_account(owner_id)
    order = Order.objects.select_for_update(no_key=True).get(pk=order_id)
    order.owner = account  # just read under its lock: callers need not read it again
    return order
