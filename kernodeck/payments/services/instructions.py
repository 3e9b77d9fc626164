"""New payment instructions ("intents"): the usable method and a fresh rate, a new address
and the exact amount, and the limits on asking for them (a throttle per account, a cap on
the instructions still watched); for an order, under the account's and the order's locks.

Apart from the set-up (`configuration`) and from what happens to instructions once given
(`lifecycle`): this is the one path that takes an address from the counter.
"""

import functools
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, router, transaction
from django.utils.translation import gettext as _

from kernodeck.accounts import throttle
from kernodeck.core import clock, rows
from kernodeck.core.errors import Conflict, InvalidInput, ServiceError, Unavailable
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_event, audit_record_all
from kernodeck.orders import locks as order_locks
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders import services as order_services
from kernodeck.orders.models import PaymentState
from kernodeck.payments import locks, registry, selectors, uris
from kernodeck.payments.amounts import crypto_amount
from kernodeck.payments.models import PaymentIntent, PaymentMethod, Purpose, Rate
from kernodeck.payments.services.configuration import rate_for_instructions, rate_stale_error
from kernodeck.payments.wallets import derive_address, new_solana_reference

_METHOD = rows.Columns(PaymentMethod, "m")
_RATE = rows.Columns(Rate, "r")


@functools.cache
def _method_with_rate_statement(vendor: str) -> str:
    # The column lists come from the models, never from input.
    return (
        f"SELECT {_METHOD.sql()}, {_RATE.sql()}, {locks.CHAIN_STATE.sql()} "  # noqa: S608
        f"FROM payments_paymentmethod m {locks.METHOD_WITH_FRESH_RATE} "
        f"{locks.METHOD_CHAIN_STATE} WHERE m.code = %s"
    )


def _fresh_since():
    """Rates fetched since this moment are fresh (KERNODECK_RATE_MAX_AGE)."""
    return clock.now() - timedelta(seconds=settings.KERNODECK_RATE_MAX_AGE)


def _method_with_rate(code: str):
    """The method, its asset's fresh rate (as `selectors.rate_current` reads it: the
    newest younger than KERNODECK_RATE_MAX_AGE) and its network's watcher state (what
    `selectors.network_healthy` decides from), in one statement written once: (method,
    rate, state), each None where there is none."""
    statement = _method_with_rate_statement(connection.vendor)
    with rows.prepared_cursor() as cursor:  # parsed and planned once per connection
        cursor.execute(statement, [rows.datetime_param(_fresh_since()), str(code or "")])
        row = cursor.fetchone()
    if row is None:
        return None, None, None
    at = len(_METHOD) + len(_RATE)
    return (
        _METHOD.load(row[: len(_METHOD)]),
        _RATE.load(row[len(_METHOD) : at]),
        locks.CHAIN_STATE.load(row[at:]),
    )


def _usable_method(
    code: str,
    method: PaymentMethod | None = None,
    *,
    rate_ready: bool,
    purpose: str = Purpose.ORDER,
    chain_state=selectors.UNREAD,
) -> PaymentMethod:
    """The method, or the refusal `selectors.instructions_refusal` decides (the decision
    the methods' availability reports); `chain_state=` its network's state when read
    already."""
    if method is None:
        method = PaymentMethod.objects.filter(code=str(code or "")).first()
    if method is None:
        raise InvalidInput(
            _("Unknown payment method; choose one of %(list)s.")
            % {"list": ", ".join(PaymentMethod.objects.values_list("code", flat=True))},
            field="method",
        )
    refusal = selectors.instructions_refusal(
        method, rate_ready=rate_ready, chain_state=chain_state
    )
    if refusal == selectors.DISABLED:
        raise Conflict(
            _("%(method)s is not offered at the moment; choose another method.")
            % {"method": method}
        )
    if refusal == selectors.UNCONFIGURED:
        raise Conflict(
            _("%(method)s is not configured on this site; choose another method.")
            % {"method": method}
        )
    if refusal == selectors.NO_CONTRACT:
        raise Conflict(_("%(method)s is not available in test-network mode.") % {"method": method})
    if refusal == selectors.NETWORK_DOWN:
        raise Unavailable(selectors.network_down_text(method))
    if refusal == selectors.RATE_STALE:
        raise rate_stale_error(method.asset, purpose=purpose)
    return method


def instructions_prepare(
    method_code: str, *, purpose: str = Purpose.ORDER
) -> tuple[PaymentMethod, Rate]:
    """The usable method and a fresh rate, or the refusal. Call it before taking any lock:
    in demo mode it may fetch a rate (demo rates answer on demand). `purpose` picks the
    words of a stale-rate refusal (an order, a top-up or an extension offer).

    The method, a fresh rate and the network's watcher state are read in one statement;
    only a missing rate (demo mode fetches one) or a refusal reads again."""
    method, rate, state = _method_with_rate(method_code)
    method = _usable_method(
        method_code,
        method,
        rate_ready=rate is not None or settings.KERNODECK_DEMO,
        purpose=purpose,
        chain_state=state,
    )
    return method, rate or rate_for_instructions(method.asset, purpose=purpose)


def _unique_solana_amount(amount: int) -> int:
    """Make a SOL amount unique among open Solana intents by adding a few lamports.

    A wallet that drops the reference key is still matched by its exact amount.
    """
    taken = set(
        PaymentIntent.objects.filter(chain="solana", monitor_until__gt=clock.now()).values_list(
            "amount_base", flat=True
        )
    )
    while Decimal(amount) in taken:
        amount += 1
    return amount


def payment_intent_create(
    *,
    owner,
    method_code: str,
    amount_usd: Decimal,
    purpose: str,
    order=None,
    topup=None,
    extension=None,
    actor=None,
    now=None,
    prepared: tuple[PaymentMethod, Rate] | None = None,
    order_event: tuple[str, object] | None = None,
    different_payment: bool = False,
    repays: PaymentIntent | None = None,
) -> PaymentIntent:
    """Create instructions: a new address (never reused), the exact amount, an expiry.

    The caller holds the lock of what is being paid (order or top-up) when it matters, and
    calls `instructions_prepare` before taking it (pass its answer as `prepared` so it is
    not read again). `now` (default: the clock) is the creation time; the instructions
    expire KERNODECK_PAYMENT_EXPIRY_SECONDS later. `order_event` (action, order) is the
    event the order's timeline records for them, written with the intent's own.
    `different_payment`: the customer confirmed that these are for a different payment
    while money seen for the same thing was being checked (noted in the audit trail).
    `repays`: the reversed payment these instructions pay again (selectors.repayment_due).
    """
    method, rate = prepared or instructions_prepare(method_code, purpose=purpose)
    wallet = registry.configured_wallets()[method.chain]
    testnet = registry.testnet()
    contract = registry.token_contract(method.code)

    now = now or clock.now()
    amount = crypto_amount(
        amount_usd, rate.usd_per_coin, decimals=method.decimals, precision=method.precision
    )
    expires_at = instructions_expiry(now)
    # No savepoint: every caller lets an error end its whole transaction anyway.
    with transaction.atomic(savepoint=False):
        # The address counter is the last lock taken and is held until the commit: what
        # follows it is only the rows that need the address.
        index = None
        reference = None
        if method.chain == "solana":
            locks.lock_counter(chain=method.chain, wallet_fingerprint=wallet.fingerprint)
            address = wallet.public_key
            reference = new_solana_reference()
            amount = _unique_solana_amount(amount)
        else:
            index = locks.counter_take_index(
                chain=method.chain, wallet_fingerprint=wallet.fingerprint
            )
            address = derive_address(
                method.chain,
                wallet.public_key,
                index,
                testnet=testnet,
                regtest=registry.regtest(),
            )
        intent = _new_intent(
            purpose=purpose,
            order=order,
            topup=topup,
            extension=extension,
            repays=repays,
            owner=owner,
            method=method,
            chain=method.chain,
            testnet=testnet,
            address=address,
            wallet_fingerprint=wallet.fingerprint,
            derivation_index=index,
            solana_reference=reference,
            demo_wallet=wallet.is_demo,
            amount_base=amount,
            amount_usd=amount_usd,
            rate_usd_per_coin=rate.usd_per_coin,
            rate_source=rate.source,
            rate_fetched_at=rate.fetched_at,
            uri=uris.payment_uri(
                method_code=method.code,
                address=address,
                base_units=amount,
                decimals=method.decimals,
                chain_id=registry.ethereum_chain_id() if method.chain == "ethereum" else None,
                token_contract=contract,
                solana_reference=reference,
                message=order.reference if order else "",
            ),
            created_at=now,
            expires_at=expires_at,
            monitor_until=expires_at + timedelta(seconds=settings.KERNODECK_MONITOR_SECONDS),
        )
        events = [
            audit_event(
                action="payment.intent_created",
                target=intent,
                actor=actor,
                after={
                    "method": method.code,
                    "address": address,
                    "index": index,
                    "amount_base": str(amount),
                    "amount_usd": str(amount_usd),
                    "rate": str(rate.usd_per_coin),
                    "rate_source": rate.source,
                    **({"different_payment": True} if different_payment else {}),
                    **({"repays": str(repays.pk)} if repays is not None else {}),
                },
            )
        ]
        if order_event is not None:
            action, target = order_event
            events.append(
                audit_event(
                    action=action,
                    target=target,
                    actor=actor,
                    after={
                        "payment": str(intent.pk),
                        "method": method.code,
                        **({"repays": str(repays.pk)} if repays is not None else {}),
                    },
                )
            )
        # The instructions and their events in one INSERT (PostgreSQL), not a compiled
        # save() and a bulk_create each.
        audit_record_all(events, along=([intent],))
    return intent


@functools.cache
def _intent_fields() -> tuple:
    """For each of PaymentIntent's concrete fields, in the order its positional arguments
    take them: (name, the related key's attribute for a relation or None, its default's
    function, the field)."""
    return tuple(
        (
            field.name,
            field.target_field.attname if field.is_relation else None,
            field.get_default,
            field,
        )
        for field in PaymentIntent._meta.concrete_fields
    )


def _new_intent(**given) -> PaymentIntent:
    """`PaymentIntent(**given)` (`given` by field name, relations as objects), built the
    way the ORM builds a loaded row, from a value per field in order: every other field
    gets its default (`get_default`, as the keyword path does), a given relation its key
    and the object (or None) cached, as assigning it does. The keyword path costs about
    twice as much (a descriptor and checks for every field); the instance is the same
    (tests/payments/test_instructions_lock_read.py)."""
    values = []
    related = []
    for name, key, default, field in _intent_fields():
        if name not in given:
            values.append(default())
            continue
        value = given.pop(name)
        if key is not None:
            related.append((field, value))
            value = None if value is None else getattr(value, key)
        values.append(value)
    if given:
        raise TypeError(f"PaymentIntent has no field {sorted(given)}")
    intent = PaymentIntent(*values)
    for field, target in related:
        field.set_cached_value(intent, target)  # None too, as assigning None does
        if target is not None and intent._state.db is None:  # as assigning the object does
            intent._state.db = router.db_for_write(PaymentIntent, instance=target)
    return intent


def instructions_expiry(now):
    return now + timedelta(seconds=settings.KERNODECK_PAYMENT_EXPIRY_SECONDS)


def instructions_throttle_check(account_id: int) -> None:
    """Refuse (429) an account that created too many instructions lately (every address
    created is one more the chain watchers must poll)."""
    throttle.check(
        "payment_create",
        str(account_id),
        message=_("You asked for many payment instructions in a short time."),
    )


def instructions_throttle_hit(account_id: int) -> None:
    throttle.hit("payment_create", str(account_id))


def instructions_check_watched_cap(intents) -> None:
    """Refuse (409) new instructions for an order or top-up whose instructions (`intents`,
    all of them, read under its lock) include KERNODECK_MAX_WATCHED_INSTRUCTIONS still
    watched."""
    cap = settings.KERNODECK_MAX_WATCHED_INSTRUCTIONS
    if selectors.intents_watched(intents) >= cap:
        raise Conflict(
            _(
                "This already has %(n)d recent payment instructions, the most we can watch "
                "at once; older ones stop being watched %(hours)d hours after they expire. "
                "Pay with one of them, or contact support with the reference."
            )
            % {"n": cap, "hours": max(1, settings.KERNODECK_MONITOR_SECONDS // 3600)}
        )


class PaymentsSeen(Conflict):
    """Money was already seen on chain for this and is not decided yet: new instructions
    (or paying from the balance) would invite the customer to pay twice (issue 23)."""

    code = "payments_seen"

    def __init__(self, seen, *, from_balance: bool = False):
        what = "; ".join(
            _("%(amounts)s on %(network)s")
            % {"amounts": ", ".join(item.amounts) or "—", "network": item.network}
            for item in seen
        )
        if from_balance:
            message = _(
                "We have already received a payment for this (%(what)s); it is being "
                "checked, so the balance is not charged. Wait for the check, or contact "
                "support with the reference."
            )
        else:
            message = _(
                "We have already received a payment for this (%(what)s); it is being "
                "checked. Do not pay again for the same thing. New instructions are given "
                "only for a different payment, once you confirm that it is one."
            )
        super().__init__(message % {"what": what})
        self.seen = seen


def instructions_check_money_seen(intents, *, different_payment: bool = False) -> None:
    """Refuse (409, `payments_seen`) new instructions while money seen at one of `intents`
    (all the instructions of an order, top-up or offer, read under its lock) is not
    decided, unless the customer said this is a different payment."""
    if different_payment:
        return
    seen = selectors.money_seen_among(intents)
    if seen:
        raise PaymentsSeen(seen)


def payment_intent_create_for_order(
    *, order, method_code: str, actor, different_payment: bool = False
) -> PaymentIntent:
    """New instructions for an order; refuses when it is not payable, already has live
    ones, money seen for it is not decided yet (unless `different_payment`), has too many
    still watched, or the account asked for too many lately."""
    instructions_throttle_check(order.owner_id)
    prepared = instructions_prepare(method_code)  # refusals and any rate fetch before the lock
    intent = _payment_intent_create_for_order(
        order=order,
        method_code=method_code,
        actor=actor,
        prepared=prepared,
        different_payment=different_payment,
    )
    instructions_throttle_hit(order.owner_id)
    return intent


def payment_intent_create_for_reference(
    *, owner, reference: str, method_code: str, actor, different_payment: bool = False
) -> PaymentIntent:
    """`payment_intent_create_for_order` for the owner's order named by `reference`, without
    reading the order before its lock (the API's path: one statement fewer), and with the
    method and its fresh rate read by the statement that locks (one more fewer).

    Another customer's (or an unknown) reference is a 404 before any other answer: a refusal
    of the throttle reads the order first and answers 404 if it is not the owner's; under
    the lock, the order is looked up by reference and owner, and the method's refusals
    come after. When no fresh rate is at hand and demo mode may fetch one, the transaction
    ends, `instructions_prepare` fetches it outside any lock, and the order is locked again."""
    try:
        instructions_throttle_check(owner.pk)
    except ServiceError:
        order_selectors.order_get_for_owner(owner=owner, reference=reference, with_offer=False)
        raise
    intent = _payment_intent_create_for_reference(
        owner=owner,
        reference=reference,
        method_code=method_code,
        actor=actor,
        prepared=None,
        different_payment=different_payment,
    )
    if intent is None:  # a rate to fetch first (demo mode)
        intent = _payment_intent_create_for_reference(
            owner=owner,
            reference=reference,
            method_code=method_code,
            actor=actor,
            prepared=instructions_prepare(method_code),
            different_payment=different_payment,
        )
    instructions_throttle_hit(owner.pk)
    return intent


@retry_lost_races
def _payment_intent_create_for_reference(
    *, owner, reference: str, method_code: str, actor, prepared, different_payment
) -> PaymentIntent | None:
    """None (and nothing done) when `prepared` is None and the method has no fresh rate
    while demo mode could fetch one: call again with `instructions_prepare`'s answer."""
    with transaction.atomic():
        if prepared is not None:
            order = locks.lock_order_of_owner(owner=owner, reference=reference)
            intents = None
        else:
            # The method, its rate and its network's watcher state come with the lock;
            # the order's instructions right after it was granted.
            order, method, rate, state, intents = (
                locks.lock_order_of_owner_with_method_and_intents(
                    owner=owner,
                    reference=reference,
                    method_code=method_code,
                    fresh_since=_fresh_since(),
                )
            )
            if rate is None and method is not None and settings.KERNODECK_DEMO:
                return None
            method = _usable_method(
                method_code, method, rate_ready=rate is not None, chain_state=state
            )
            prepared = (method, rate)
        return _create_for_locked_order(
            order=order,
            method_code=method_code,
            actor=actor,
            prepared=prepared,
            different_payment=different_payment,
            intents=intents,
        )


@retry_lost_races
def _payment_intent_create_for_order(
    *, order, method_code: str, actor, prepared, different_payment
) -> PaymentIntent:
    with transaction.atomic():
        order = order_locks.lock_order(order.pk, owner_id=order.owner_id)  # account, order
        return _create_for_locked_order(
            order=order,
            method_code=method_code,
            actor=actor,
            prepared=prepared,
            different_payment=different_payment,
        )


def _create_for_locked_order(
    *, order, method_code: str, actor, prepared, different_payment, intents=None
) -> PaymentIntent:
    """The rest of the order's instructions, under the account's and the order's locks.

    A settled order is payable again only where an operator asked for a reversed payment
    to be paid again (`selectors.repayment_due`): the instructions are for what left the
    chain (its USD at the reversed payment's rate), they repay it, and the order stays
    settled (its rental is not touched; no hold is needed). `intents`: the order's
    instructions when the caller read them under the lock already."""
    if intents is None:
        intents = locks.intents_of_locked_order(order)
    repays = None
    if order.payment_state == PaymentState.SETTLED:
        repays = selectors.repayment_due(intents)
    if repays is None:
        order_selectors.order_check_payable(order)
    live = selectors.live_intent(intents)
    if live is not None:
        raise Conflict(
            _(
                "Order %(reference)s already has payment instructions in %(method)s, valid "
                "until %(until)s UTC (payment %(id)s). Use them, or abandon them first."
            )
            % {
                "reference": order.reference,
                "method": live.method,
                "until": live.expires_at.strftime("%Y-%m-%d %H:%M"),
                "id": live.pk,
            }
        )
    # Under the order's lock: the watcher's reconciliation, which writes what was seen,
    # queues on it too, so money seen before this point is never missed here.
    instructions_check_money_seen(intents, different_payment=different_payment)
    instructions_check_watched_cap(intents)
    # Keep the units while the customer pays: the offer is locked (if the hold lapsed)
    # before the address counter, as the lock order says.
    now = clock.now()
    if repays is None:
        order_services.order_hold_extend(order=order, until=instructions_expiry(now), actor=actor)
    intent = payment_intent_create(
        owner=order.owner,
        method_code=method_code,
        amount_usd=order.total_usd if repays is None else selectors.reversed_usd(repays),
        purpose=Purpose.ORDER,
        order=order,
        actor=actor,
        now=now,
        prepared=prepared,
        order_event=(
            "order.payment_instructions_created"
            if repays is None
            else "order.repayment_instructions_created",
            order,
        ),
        different_payment=different_payment,
        repays=repays,
    )
    return intent
