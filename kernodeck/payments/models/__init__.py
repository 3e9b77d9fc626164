"""The payments app's models, one module per part of the flow.

`configuration` holds what quoting is set up with (methods, rates, address counters),
`intents` the payment instructions and their statuses, `transfers` what the chain watchers
record. Every model and choice is imported here, so Django's app registry and migrations see
them all and `from kernodeck.payments.models import X` keeps working.
"""

from kernodeck.payments.models.configuration import AddressCounter, PaymentMethod, Rate
from kernodeck.payments.models.intents import (
    EXCEPTION_STATUSES,
    OPEN_STATUSES,
    REVIEW_INTENT_CASES,
    ClosedReason,
    IntentException,
    IntentStatus,
    PaymentIntent,
    Purpose,
    Resolution,
    ReversalDecision,
)
from kernodeck.payments.models.transfers import (
    REVIEW_KINDS,
    REVIEW_TRANSFER_CASES,
    TRANSFER_AMOUNT_MAX,
    ChainState,
    MempoolMemory,
    PollCursor,
    Transfer,
    TransferKind,
)

__all__ = [
    "EXCEPTION_STATUSES",
    "OPEN_STATUSES",
    "REVIEW_INTENT_CASES",
    "REVIEW_KINDS",
    "REVIEW_TRANSFER_CASES",
    "TRANSFER_AMOUNT_MAX",
    "AddressCounter",
    "ChainState",
    "ClosedReason",
    "IntentException",
    "IntentStatus",
    "MempoolMemory",
    "PaymentIntent",
    "PaymentMethod",
    "PollCursor",
    "Purpose",
    "Rate",
    "Resolution",
    "ReversalDecision",
    "Transfer",
    "TransferKind",
]
