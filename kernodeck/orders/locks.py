from kernodeck.catalog.models import Offer
from kernodeck.orders.models import Order


def lock_offer(offer_id: int) -> Offer:
    """Lock the offer row: every order for the same offer queues behind it."""
    return Offer.objects.select_for_update().get(pk=offer_id)


def lock_order(order_id: int) -> Order:
    return Order.objects.select_for_update().get(pk=order_id)
