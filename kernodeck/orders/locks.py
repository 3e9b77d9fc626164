"""Row locks of the orders domain. Always in the documented order: account, top-up,
order, intents, offer, address counter (docs/architecture.md, "Lock order")."""

from kernodeck.accounts.locks import lock_account
from kernodeck.catalog.models import Offer
from kernodeck.orders.models import Order


def lock_offer(offer_id: int) -> Offer:
    """Lock the offer row: every capacity count of the same offer queues behind it."""
    return Offer.objects.select_for_update(no_key=True).get(pk=offer_id)


def lock_order(order_id: int) -> Order:
    """Lock the order's owner account, then the order (the account always comes first)."""
    owner_id = Order.objects.values_list("owner_id", flat=True).get(pk=order_id)
    lock_account(owner_id)
    return Order.objects.select_for_update(no_key=True).get(pk=order_id)
