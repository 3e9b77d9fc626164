from django.db import IntegrityError, transaction

from kernodeck.payments.models import AddressCounter, PaymentIntent


def lock_counter(*, chain: str, wallet_fingerprint: str) -> AddressCounter:
    """Lock the address sequence of one wallet; create it on first use."""
    try:
        with transaction.atomic():
            AddressCounter.objects.get_or_create(
                chain=chain, wallet_fingerprint=wallet_fingerprint
            )
    except IntegrityError:
        pass  # created by a concurrent transaction in the meantime
    return AddressCounter.objects.select_for_update().get(
        chain=chain, wallet_fingerprint=wallet_fingerprint
    )


def lock_intent(intent_id) -> PaymentIntent:
    return PaymentIntent.objects.select_for_update().get(pk=intent_id)
