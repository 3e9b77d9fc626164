"""Payment actions: exchange rates, payment instructions ("intents"), declarations."""

import functools
import logging
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import connection, transaction
from django.utils.translation import gettext as _

from kernodeck.accounts import throttle
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput, ServiceError, Unavailable
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_event, audit_record, audit_record_all
from kernodeck.orders import locks as order_locks
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders import services as order_services
from kernodeck.payments import locks, methods, registry, rows, selectors, uris
from kernodeck.payments.amounts import crypto_amount
from kernodeck.payments.models import (
    ClosedReason,
    IntentStatus,
    PaymentIntent,
    PaymentMethod,
    Purpose,
    Rate,
)
from kernodeck.payments.rates.base import ASSETS
from kernodeck.payments.rates.providers import build_providers, fetch_rates
from kernodeck.payments.wallets import derive_address, new_solana_reference

logger = logging.getLogger(__name__)


def payment_methods_ensure() -> int:
    """Create any missing method row from `methods.METHODS`; existing rows are left as the
    operators set them. Returns how many were created. (The data migration does the same
    on a new database; this repairs a flushed one, e.g. in transactional tests.)"""
    created = 0
    for order, spec in enumerate(methods.METHODS):
        _method, was_created = PaymentMethod.objects.get_or_create(
            code=spec.code,
            defaults={
                "asset": spec.asset,
                "network": spec.network,
                "chain": spec.chain,
                "decimals": spec.decimals,
                "precision": spec.precision,
                "confirmations": spec.confirmations,
                "sort_order": order,
            },
        )
        created += was_created
    return created


# -- exchange rates ------------------------------------------------------------------


def rates_refresh(assets=ASSETS) -> tuple[list[Rate], list[str]]:
    """Fetch rates from the configured providers (network first, no transaction open)."""
    providers = build_providers(
        demo=settings.KERNODECK_DEMO,
        names=settings.KERNODECK_RATE_PROVIDERS,
        kraken_url=settings.KERNODECK_KRAKEN_URL,
        coingecko_url=settings.KERNODECK_COINGECKO_URL,
        coingecko_api_key=settings.KERNODECK_COINGECKO_API_KEY,
        timeout=settings.KERNODECK_HTTP_TIMEOUT,
    )
    fetched, errors = fetch_rates(providers, list(assets))
    for error in errors:
        logger.warning("rate provider failed: %s", error)
    stored = Rate.objects.bulk_create(
        Rate(
            asset=rate.asset,
            usd_per_coin=rate.usd_per_coin,
            source=rate.source,
            fetched_at=rate.fetched_at,
        )
        for rate in fetched.values()
    )
    return stored, errors


def rate_record_manual(*, asset: str, usd_per_coin, actor=None) -> Rate:
    """Record a rate an operator read elsewhere (back-office or `kernodeck set_rate`)."""
    asset = str(asset or "").strip().upper()
    if asset not in ASSETS:
        raise InvalidInput(
            _("Unknown asset %(asset)s; use one of %(list)s.")
            % {"asset": asset, "list": ", ".join(ASSETS)},
            field="asset",
        )
    try:
        value = Decimal(str(usd_per_coin).strip())
    except (InvalidOperation, ValueError):
        value = Decimal(0)
    if not value.is_finite() or value <= 0:
        raise InvalidInput(
            _("The rate must be a positive number of USD per coin."), field="usd_per_coin"
        )
    with transaction.atomic():
        rate = Rate.objects.create(
            asset=asset,
            usd_per_coin=value,
            source="manual",
            fetched_at=clock.now(),
            entered_by=actor,
        )
        audit_record(
            action="rate.manual_recorded",
            target=rate,
            actor=actor,
            after={"asset": asset, "usd_per_coin": str(value)},
        )
    return rate


def rate_for_instructions(asset: str) -> Rate:
    """A fresh rate for new instructions, or Unavailable (503) saying it is stale."""
    rate = selectors.rate_current(asset)
    if rate is None and settings.KERNODECK_DEMO:
        rates_refresh([asset])
        rate = selectors.rate_current(asset)
    if rate is None:
        raise Unavailable(
            _(
                "The %(asset)s exchange rate is out of date, so no amount can be computed "
                "right now. Your order is safe; please try again in a few minutes."
            )
            % {"asset": asset}
        )
    return rate


# -- payment instructions ------------------------------------------------------------


_METHOD = rows.Columns(PaymentMethod, "m")
_RATE = rows.Columns(Rate, "r")


@functools.cache
def _method_with_rate_statement(vendor: str) -> str:
    # The column lists come from the models, never from input.
    return (
        f"SELECT {_METHOD.sql()}, {_RATE.sql()} FROM payments_paymentmethod m "  # noqa: S608
        "LEFT JOIN payments_rate r ON r.id = (SELECT n.id FROM payments_rate n "
        "WHERE n.asset = m.asset AND n.fetched_at >= %s "
        "ORDER BY n.fetched_at DESC, n.id DESC LIMIT 1) "
        "WHERE m.code = %s"
    )


def _method_with_rate(code: str) -> tuple[PaymentMethod | None, Rate | None]:
    """The method and its asset's fresh rate (as `selectors.rate_current` reads it: the
    newest younger than KERNODECK_RATE_MAX_AGE) in one statement written once."""
    fresh_since = clock.now() - timedelta(seconds=settings.KERNODECK_RATE_MAX_AGE)
    statement = _method_with_rate_statement(connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute(statement, [rows.datetime_param(fresh_since), str(code or "")])
        row = cursor.fetchone()
    if row is None:
        return None, None
    return _METHOD.load(row[: len(_METHOD)]), _RATE.load(row[len(_METHOD) :])


def _usable_method(code: str, method: PaymentMethod | None = None) -> PaymentMethod:
    if method is None:
        method = PaymentMethod.objects.filter(code=str(code or "")).first()
    if method is None:
        raise InvalidInput(
            _("Unknown payment method; choose one of %(list)s.")
            % {"list": ", ".join(PaymentMethod.objects.values_list("code", flat=True))},
            field="method",
        )
    if not method.enabled:
        raise Conflict(
            _("%(method)s is not offered at the moment; choose another method.")
            % {"method": method}
        )
    if method.chain not in registry.configured_wallets():
        raise Conflict(
            _("%(method)s is not configured on this site; choose another method.")
            % {"method": method}
        )
    if methods.missing_contract(method.code, testnet=registry.testnet()):
        raise Conflict(_("%(method)s is not available in test-network mode.") % {"method": method})
    return method


def instructions_prepare(method_code: str) -> tuple[PaymentMethod, Rate]:
    """The usable method and a fresh rate, or the refusal. Call it before taking any lock:
    in demo mode it may fetch a rate (demo rates answer on demand).

    The method and a fresh rate are read in one statement; only a missing rate (demo mode
    fetches one) or a refusal reads again."""
    method, rate = _method_with_rate(method_code)
    method = _usable_method(method_code, method)
    return method, rate or rate_for_instructions(method.asset)


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
) -> PaymentIntent:
    """Create instructions: a new address (never reused), the exact amount, an expiry.

    The caller holds the lock of what is being paid (order or top-up) when it matters, and
    calls `instructions_prepare` before taking it (pass its answer as `prepared` so it is
    not read again). `now` (default: the clock) is the creation time; the instructions
    expire KERNODECK_PAYMENT_EXPIRY_SECONDS later. `order_event` (action, order) is the
    event the order's timeline records for them, written with the intent's own.
    """
    method, rate = prepared or instructions_prepare(method_code)
    wallet = registry.configured_wallets()[method.chain]
    testnet = registry.testnet()
    contract = methods.token_contract(method.code, testnet=testnet)

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
            address = derive_address(method.chain, wallet.public_key, index, testnet=testnet)
        intent = PaymentIntent.objects.create(
            purpose=purpose,
            order=order,
            topup=topup,
            extension=extension,
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
                chain_id=methods.ETHEREUM_CHAIN_ID[testnet]
                if method.chain == "ethereum"
                else None,
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
                    after={"payment": str(intent.pk), "method": method.code},
                )
            )
        audit_record_all(events)
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


def payment_intent_create_for_order(*, order, method_code: str, actor) -> PaymentIntent:
    """New instructions for an order; refuses when it is not payable, already has live
    ones, has too many still watched, or the account asked for too many lately."""
    instructions_throttle_check(order.owner_id)
    prepared = instructions_prepare(method_code)  # refusals and any rate fetch before the lock
    intent = _payment_intent_create_for_order(
        order=order, method_code=method_code, actor=actor, prepared=prepared
    )
    instructions_throttle_hit(order.owner_id)
    return intent


def payment_intent_create_for_reference(
    *, owner, reference: str, method_code: str, actor
) -> PaymentIntent:
    """`payment_intent_create_for_order` for the owner's order named by `reference`, without
    reading the order before its lock (the API's path: one statement fewer).

    Another customer's (or an unknown) reference is a 404 before any other answer: a refusal
    of the throttle or of the method reads the order first and answers 404 if it is not the
    owner's; under the lock, the order is looked up by reference and owner."""
    try:
        instructions_throttle_check(owner.pk)
        prepared = instructions_prepare(method_code)
    except ServiceError:
        order_selectors.order_get_for_owner(owner=owner, reference=reference, with_offer=False)
        raise
    intent = _payment_intent_create_for_reference(
        owner=owner, reference=reference, method_code=method_code, actor=actor, prepared=prepared
    )
    instructions_throttle_hit(owner.pk)
    return intent


@retry_lost_races
def _payment_intent_create_for_reference(
    *, owner, reference: str, method_code: str, actor, prepared
) -> PaymentIntent:
    with transaction.atomic():
        order = locks.lock_order_of_owner(owner_id=owner.pk, reference=reference)
        return _create_for_locked_order(
            order=order, method_code=method_code, actor=actor, prepared=prepared
        )


@retry_lost_races
def _payment_intent_create_for_order(*, order, method_code: str, actor, prepared) -> PaymentIntent:
    with transaction.atomic():
        order = order_locks.lock_order(order.pk, owner_id=order.owner_id)  # account, order
        return _create_for_locked_order(
            order=order, method_code=method_code, actor=actor, prepared=prepared
        )


def _create_for_locked_order(*, order, method_code: str, actor, prepared) -> PaymentIntent:
    """The rest of the order's instructions, under the account's and the order's locks."""
    order_selectors.order_check_payable(order)
    intents = locks.intents_of_locked_order(order)
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
    instructions_check_watched_cap(intents)
    # Keep the units while the customer pays: the offer is locked (if the hold lapsed)
    # before the address counter, as the lock order says.
    now = clock.now()
    order_services.order_hold_extend(order=order, until=instructions_expiry(now), actor=actor)
    intent = payment_intent_create(
        owner=order.owner,
        method_code=method_code,
        amount_usd=order.total_usd,
        purpose=Purpose.ORDER,
        order=order,
        actor=actor,
        now=now,
        prepared=prepared,
        order_event=("order.payment_instructions_created", order),
    )
    return intent


class IntentClosed(Conflict):
    """The instructions were closed because the order was settled otherwise or cancelled."""


def _refuse_closed(intent: PaymentIntent) -> None:
    if intent.closed_at is not None:
        raise IntentClosed(
            _(
                "These instructions are closed (%(why)s): do not send anything to them. If "
                "you already did, contact support with the order reference; nothing is lost."
            )
            % {"why": intent.get_closed_reason_display().lower()}
        )


def payment_intent_declare(*, intent: PaymentIntent, actor) -> PaymentIntent:
    """ "I have paid": note it and ask the watchers for an early look. Moves no money.

    Refused (409) on closed instructions, and throttled per account: each declaration
    asks the chain watchers for an early scan.
    """
    if intent.declared_at is None:
        throttle.check(
            "payment_declare",
            str(intent.owner_id),
            message=_("You declared many payments in a short time."),
        )
    intent, declared_now = _payment_intent_declare(intent=intent, actor=actor)
    if declared_now:
        throttle.hit("payment_declare", str(intent.owner_id))
    return intent


@retry_lost_races
def _payment_intent_declare(*, intent: PaymentIntent, actor) -> tuple[PaymentIntent, bool]:
    with transaction.atomic():
        intent = locks.lock_intent(intent.pk)  # account, order or top-up, then the intent
        _refuse_closed(intent)
        if intent.declared_at is not None:
            return intent, False
        now = clock.now()
        intent.declared_at = now
        intent.rescan_requested_at = now
        intent.save(update_fields=["declared_at", "rescan_requested_at"])
        audit_record(action="payment.declared", target=intent, actor=actor)
        network = intent.chain
        transaction.on_commit(lambda: _request_rescan(network))
        if intent.order_id:
            audit_record(
                action="order.payment_declared",
                target=intent.order,
                actor=actor,
                after={"payment": str(intent.pk)},
            )
    return intent, True


def _request_rescan(network: str) -> None:
    from kernodeck.payments.tasks import watch_network

    watch_network(network)


@retry_lost_races
def payment_intent_abandon(*, intent: PaymentIntent, actor) -> PaymentIntent:
    """The customer drops these instructions to pick another method.

    The address is still watched until `monitor_until`: money sent to it later is found
    and reviewed, never lost.
    """
    with transaction.atomic():
        intent = locks.lock_intent(intent.pk)
        if intent.abandoned_at is not None or intent.closed_at is not None:
            return intent
        if intent.status not in {IntentStatus.PENDING, IntentStatus.EXPIRED}:
            raise Conflict(
                _(
                    "A payment has already been seen for these instructions; "
                    "they cannot be abandoned."
                )
            )
        intent.abandoned_at = clock.now()
        intent.save(update_fields=["abandoned_at"])
        audit_record(action="payment.abandoned", target=intent, actor=actor)
        if intent.order_id:
            audit_record(
                action="order.payment_abandoned",
                target=intent.order,
                actor=actor,
                after={"payment": str(intent.pk)},
            )
    return intent


# Statuses closed with the order: nothing was received yet, or it is still unconfirmed.
CLOSABLE_STATUSES = (IntentStatus.PENDING, IntentStatus.DETECTED, IntentStatus.EXPIRED)


def payment_intents_close_for_order(
    *, order, reason: str, actor=None, except_intent_id=None
) -> list[PaymentIntent]:
    """Close the order's unpaid instructions because it was settled otherwise or cancelled.

    Called inside the order's transaction, with the order locked; `except_intent_id` is
    the payment settling it, which stays open. The payment page then
    says "do not send"; the address stays watched until `monitor_until`, and whatever
    still arrives is recorded and goes to review (watching treats closed as decided).
    """
    if reason not in ClosedReason.values:
        raise ValueError(reason)
    now = clock.now()
    closed = []
    for intent in locks.lock_intents_of_order(
        order_id=order.pk, closed_at__isnull=True, resolution="", status__in=CLOSABLE_STATUSES
    ):
        if except_intent_id is not None and str(intent.pk) == str(except_intent_id):
            continue  # the payment that settles the order
        intent.closed_at = now
        intent.closed_reason = reason
        intent.save(update_fields=["closed_at", "closed_reason"])
        audit_record(
            action="payment.closed",
            target=intent,
            actor=actor,
            before={"status": intent.status},
            after={"closed_reason": reason},
        )
        closed.append(intent)
    return closed
