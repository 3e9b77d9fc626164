"""Payment actions: exchange rates, payment instructions ("intents"), declarations.

One module per seam, every name callers use re-exported here so they keep writing
`services.payment_intent_create_for_order(...)`:

- `configuration`: the payment methods' rows and the exchange rates;
- `instructions`: new instructions (method, rate, address, amount), their throttle and
  watched cap, those of an order under its locks;
- `lifecycle`: an intent once given: declared paid, abandoned, closed with its order.

`lifecycle` imports `payments.tasks` at module level (a declaration enqueues an early
watcher pass) and `tasks` imports this package; each uses the other's attributes only
inside functions, so either may be imported first.
"""

from kernodeck.payments.services.configuration import (
    payment_methods_ensure,
    rate_for_instructions,
    rate_record_manual,
    rates_refresh,
)
from kernodeck.payments.services.instructions import (
    PaymentsSeen,
    instructions_check_money_seen,
    instructions_check_watched_cap,
    instructions_expiry,
    instructions_prepare,
    instructions_throttle_check,
    instructions_throttle_hit,
    payment_intent_create,
    payment_intent_create_for_order,
    payment_intent_create_for_reference,
)
from kernodeck.payments.services.lifecycle import (
    CLOSABLE_STATUSES,
    IntentClosed,
    payment_intent_abandon,
    payment_intent_declare,
    payment_intents_close_for_extension,
    payment_intents_close_for_order,
)

__all__ = [
    "CLOSABLE_STATUSES",
    "IntentClosed",
    "PaymentsSeen",
    "instructions_check_money_seen",
    "instructions_check_watched_cap",
    "instructions_expiry",
    "instructions_prepare",
    "instructions_throttle_check",
    "instructions_throttle_hit",
    "payment_intent_abandon",
    "payment_intent_create",
    "payment_intent_create_for_order",
    "payment_intent_create_for_reference",
    "payment_intent_declare",
    "payment_intents_close_for_extension",
    "payment_intents_close_for_order",
    "payment_methods_ensure",
    "rate_for_instructions",
    "rate_record_manual",
    "rates_refresh",
]
