import functools
import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_DOWN, Decimal

from django.conf import settings
from django.db import connection
from django.utils.translation import gettext as _

from kernodeck.core import clock, rows
from kernodeck.core.errors import NotFound
from kernodeck.core.money import coin, usd
from kernodeck.payments import registry
from kernodeck.payments.amounts import units_to_decimal
from kernodeck.payments.chains.adapters import NETWORKS, api_url, configured_networks
from kernodeck.payments.models import (
    OPEN_STATUSES,
    REVIEW_KINDS,
    ChainState,
    IntentException,
    IntentStatus,
    PaymentIntent,
    PaymentMethod,
    Rate,
    Resolution,
    ReversalDecision,
    Transfer,
    TransferKind,
)
from kernodeck.payments.vocabulary import intent_state, intent_state_key


def rate_current(asset: str) -> Rate | None:
    """The newest rate for `asset` if it is younger than KERNODECK_RATE_MAX_AGE."""
    fresh_since = clock.now() - timedelta(seconds=settings.KERNODECK_RATE_MAX_AGE)
    return (
        Rate.objects.filter(asset=asset, fetched_at__gte=fresh_since)
        .order_by("-fetched_at", "-id")
        .first()
    )


@dataclass(frozen=True)
class MethodAvailability:
    method: PaymentMethod
    available: bool
    reason: str  # why not, in words for the customer; empty when available


# Why new instructions for a method are refused right now.
DISABLED = "disabled"
UNCONFIGURED = "unconfigured"
NO_CONTRACT = "no_contract"
NETWORK_DOWN = "network_down"
RATE_STALE = "rate_stale"


def rate_at_hand(asset: str) -> bool:
    """Whether new instructions would get a rate: a fresh one is stored, or demo rates,
    which answer on demand, are on."""
    return settings.KERNODECK_DEMO or rate_current(asset) is not None


# network_healthy's `state` when the caller has not read it.
UNREAD = object()


def instructions_refusal(
    method: PaymentMethod, *, rate_ready: bool, chain_state=UNREAD
) -> str | None:
    """The one decision whether `method` gives instructions now: None, or why not (one of
    the codes above). Instruction creation (services.instructions) raises on it and the
    methods' availability (pages, GET /payment-methods) reports it; `rate_ready` says
    whether a fresh rate is at hand (`rate_at_hand`); `chain_state`, the method's
    network's ChainState (or None) when the caller read it already."""
    if not method.enabled:
        return DISABLED
    if method.chain not in registry.configured_wallets():
        return UNCONFIGURED
    if registry.missing_contract(method.code):
        return NO_CONTRACT
    if not network_healthy(method.chain, state=chain_state):
        return NETWORK_DOWN
    if not rate_ready:
        return RATE_STALE
    return None


def network_down_text(method: PaymentMethod) -> str:
    return _(
        "The %(network)s network cannot be watched right now, so payments could not "
        "be verified; choose another method or try again later."
    ) % {"network": method.network}


def _short_reason(code: str, method: PaymentMethod) -> str:
    """The refusal in a list of methods, beside the method's name."""
    if code == DISABLED:
        return _("Not offered at the moment.")
    if code == UNCONFIGURED:
        return _("Not configured on this site.")
    if code == NO_CONTRACT:
        return _("Not available in test-network mode.")
    if code == NETWORK_DOWN:
        return network_down_text(method)
    return _("No fresh exchange rate for %(asset)s right now; try again in a few minutes.") % {
        "asset": method.asset
    }


def method_availability(method: PaymentMethod) -> MethodAvailability:
    refusal = instructions_refusal(method, rate_ready=rate_at_hand(method.asset))
    if refusal is None:
        return MethodAvailability(method, True, "")
    return MethodAvailability(method, False, _short_reason(refusal, method))


def methods_overview() -> list[MethodAvailability]:
    return [method_availability(method) for method in PaymentMethod.objects.all()]


def intent_is_live(intent: PaymentIntent) -> bool:
    """Live: instructions a customer may still pay (open, not abandoned, closed or expired)."""
    return (
        intent.status in OPEN_STATUSES
        and intent.abandoned_at is None
        and intent.closed_at is None
        and intent.expires_at > clock.now()
    )


def intents_watched(intents) -> int:
    """How many of `intents` (the instructions of one order or top-up) are still watched.

    Abandoned and expired instructions stay watched until `monitor_until`, and each one
    costs the watchers chain-API calls, so their number is capped per order and top-up.
    """
    now = clock.now()
    return sum(1 for intent in intents if intent.monitor_until > now)


# The states (payments.vocabulary) at which money was seen and no decision was taken yet.
SEEN_UNDECIDED_STATES = frozenset({"detected", "confirmed", "review"})
# A decided or allocated payment's money is counted already: only a new review case reopens it
# (a reversed one's too: its case is the operator's, settlement.reversal).
_DECIDED_STATES = frozenset(
    {"decided_settled", "decided_credited", "decided_refunded", "allocated", "reversed"}
)
_COUNTED_KINDS = (TransferKind.MATCHED, TransferKind.LATE)


@dataclass(frozen=True)
class MoneySeen:
    """Money seen on chain for one set of instructions and not decided yet: what the
    customer reads ("we have received 12.5 USDC on Ethereum; it is being checked")."""

    intent: PaymentIntent
    amounts: tuple[str, ...]  # "12.5 USDC", one per asset seen
    network: str
    state: str  # the vocabulary's words for the instructions


def money_seen_among(intents) -> list[MoneySeen]:
    """Those of `intents` (one order's, top-up's or extension offer's instructions, with
    their method) at which money was seen and not decided: their state says so (seen,
    confirmed but not allocated, under review), or a transfer to them is stored that the
    reconciliation has not counted yet or that an operator must still look at.

    One query for the transfers, whatever the number of intents. Paying again while this
    list is not empty would take the money twice (issue 23)."""
    intents = list(intents)
    if not intents:
        return []
    transfers: dict = {}
    for transfer in Transfer.objects.filter(
        intent_id__in=[intent.pk for intent in intents], disappeared_at__isnull=True
    ).filter(kind__in=(*_COUNTED_KINDS, *sorted(REVIEW_KINDS))):
        transfers.setdefault(transfer.intent_id, []).append(transfer)
    found = []
    for intent in sorted(intents, key=lambda i: i.created_at):
        key = intent_state_key(intent)
        open_transfers = [
            t
            for t in transfers.get(intent.pk, [])
            if (t.kind in REVIEW_KINDS and t.review_resolved_at is None)
            or (t.kind in _COUNTED_KINDS and key not in _DECIDED_STATES)
        ]
        if key not in SEEN_UNDECIDED_STATES and not open_transfers:
            continue
        found.append(
            MoneySeen(
                intent=intent,
                amounts=_amounts_seen(intent, open_transfers),
                network=intent.method.network,
                state=intent_state(intent).label,
            )
        )
    return found


def _amounts_seen(intent: PaymentIntent, transfers) -> tuple[str, ...]:
    method = intent.method
    own = sum(int(t.amount_base) for t in transfers if t.asset == method.asset)
    own = max(own, int(intent.received_base))
    # In the reader's figures (es "146,66 USDC"), exact to the base unit.
    amounts = [coin(own, method.decimals, method.asset)] if own else []
    # Another asset sent to this address: its decimals are not this method's, so no figure.
    amounts += sorted({t.asset for t in transfers if t.asset != method.asset})
    return tuple(amounts)


def order_money_seen(*, order) -> list[MoneySeen]:
    """The order's instructions with money seen and not decided (`money_seen_among`)."""
    return money_seen_among(intents_for_order(order=order))


def topup_money_seen(*, topup) -> list[MoneySeen]:
    return money_seen_among(topup.intents.select_related("method"))


def extension_money_seen(*, extension) -> list[MoneySeen]:
    return money_seen_among(extension.intents.select_related("method"))


def order_payment_seen(*, order) -> PaymentIntent | None:
    """The first instructions of the order at which money was seen and no decision closed
    the case yet: paying the order otherwise now would take the money twice."""
    seen = order_money_seen(order=order)
    return seen[0].intent if seen else None


def order_declared_unverified(*, order) -> list[PaymentIntent]:
    """Instructions the customer declared paid ("I have paid") that nothing confirmed or
    closed yet, while their address is still watched: the transfer may still arrive."""
    return _declared_unverified(order=order)


def extension_declared_unverified(*, extension) -> list[PaymentIntent]:
    """The same for an extension offer's instructions."""
    return _declared_unverified(extension=extension)


def _declared_unverified(**paying_for) -> list[PaymentIntent]:
    return list(
        PaymentIntent.objects.filter(
            **paying_for,
            declared_at__isnull=False,
            closed_at__isnull=True,
            abandoned_at__isnull=True,
            status__in=(IntentStatus.PENDING, IntentStatus.EXPIRED),
            monitor_until__gt=clock.now(),
        ).select_related("method")
    )


def live_intent(intents) -> PaymentIntent | None:
    """The one instructions among `intents` that can still be paid, if any."""
    return next((intent for intent in intents if intent_is_live(intent)), None)


def reversed_usd(intent: PaymentIntent) -> Decimal:
    """What left the chain of a reversed payment, in USD at the intent's quoted rate."""
    coins = units_to_decimal(int(intent.reversed_base), intent.method.decimals)
    return usd(coins * intent.rate_usd_per_coin)


def intent_pays(intent: PaymentIntent) -> bool:
    """Its money went to what it paid for: allocated, or settled by an operator."""
    return intent.status == IntentStatus.ALLOCATED or intent.resolution == Resolution.SETTLED


def repayment_due(intents) -> PaymentIntent | None:
    """Among `intents` (one order's instructions), the oldest reversed payment that an
    operator asked the customer to pay again ("repay") and that no repayment (instructions
    with `repays` = it) has paid yet: its `reversed_usd` is owed, and the order, settled,
    gives new instructions for that amount (services.instructions)."""
    intents = list(intents)
    repaid = {i.repays_id for i in intents if i.repays_id is not None and intent_pays(i)}
    for intent in sorted(intents, key=lambda i: i.created_at):
        if (
            intent.exception == IntentException.REVERSED
            and intent.reversal_decision == ReversalDecision.REPAY
            and intent.pk not in repaid
        ):
            return intent
    return None


def declared_intents(*, order) -> list[PaymentIntent]:
    """The order's instructions the customer said they paid ("He pagado")."""
    return [intent for intent in intents_for_order(order=order) if intent.declared_at]


def intents_for_order(*, order):
    """The order's instructions, newest first, with their method.

    Read through the order's own manager, so every intent's `.order` is the given object:
    reading `intent.order` afterwards costs no query.
    """
    return order.intents.select_related("method").order_by("-created_at")


_INTENT_KEY = rows.Columns(PaymentIntent, "i", ("id",))


@functools.cache
def _order_references_statement(vendor: str) -> str:
    # Written once per database: the names come from the models, never from input.
    quote = connection.ops.quote_name
    orders = quote(PaymentIntent.order.field.related_model._meta.db_table)
    return (
        f"SELECT i.{quote('id')}, o.{quote('reference')} "  # noqa: S608
        f"FROM {quote(PaymentIntent._meta.db_table)} i "
        f"LEFT JOIN {orders} o ON o.{quote('id')} = i.{quote('order_id')} "
        f"WHERE {rows.one_of('i.' + quote('id'), vendor)}"
    )


def intent_order_references(intent_ids: list[uuid.UUID]) -> dict[uuid.UUID, str | None]:
    """For each of these payments that exists, the reference of the order it pays (None
    for a top-up's or an extension's), by payment id: one statement written once for any
    number of payments."""
    if not intent_ids:
        return {}
    vendor, key = connection.vendor, PaymentIntent._meta.pk
    keys = [key.get_db_prep_value(pk, connection) for pk in intent_ids]
    with rows.prepared_cursor() as cursor:
        cursor.execute(_order_references_statement(vendor), [rows.list_param(keys, vendor)])
        found = cursor.fetchall()
    convert = _INTENT_KEY.converter(connection)
    return {convert((pk,))[0]: reference for pk, reference in found}


_INTENT = rows.Columns(PaymentIntent, "i", epoch_datetimes=True)
_INTENT_METHOD = rows.Columns(PaymentMethod, "m", epoch_datetimes=True)


@functools.cache
def _intents_of_orders_statement(vendor: str, count: int) -> str:
    # The column lists come from the models and the placeholders from a count, never from
    # input.
    quote = connection.ops.quote_name
    return (
        f"SELECT {_INTENT.sql()}, {_INTENT_METHOD.sql()} "  # noqa: S608
        f"FROM {quote(PaymentIntent._meta.db_table)} i "
        f"JOIN {quote(PaymentMethod._meta.db_table)} m ON m.{quote('code')} = i.method_id "
        f"WHERE i.order_id IN ({', '.join(['%s'] * count)}) ORDER BY i.created_at DESC"
    )


def intents_by_order(orders) -> dict[int, list[PaymentIntent]]:
    """The instructions of each order of a list, newest first, with their method, by
    order id: one statement, written once per list length, not a queryset built each time.
    The orders are Order instances or rows with their `pk` (`orders.selectors.OrderRow`, as
    the API's list reads them); each intent's `.order` is its order from the list (reading
    it, or its `reference`, costs no query). Lighter than `orders.selectors.intents_prefetch`
    where only the lists are needed."""
    by_id = {order.pk: order for order in orders}
    grouped = {order_id: [] for order_id in by_id}
    if not by_id:
        return grouped
    with rows.prepared_cursor() as cursor:
        cursor.execute(_intents_of_orders_statement(connection.vendor, len(by_id)), list(by_id))
        found = cursor.fetchall()
    width = len(_INTENT)
    set_method = PaymentIntent.method.field.set_cached_value
    set_order = PaymentIntent.order.field.set_cached_value
    for row in found:
        intent = _INTENT.load(row[:width])
        set_method(intent, _INTENT_METHOD.load(row[width:]))
        set_order(intent, by_id[intent.order_id])
        grouped[intent.order_id].append(intent)
    return grouped


def intents_loaded(parent) -> list[PaymentIntent]:
    """The instructions of an order or top-up, newest first: the prefetched ones when the
    list was read with `orders.selectors.intents_prefetch`, otherwise one query."""
    if "intents" in getattr(parent, "_prefetched_objects_cache", {}):
        return list(parent.intents.all())
    return list(parent.intents.select_related("method").order_by("-created_at"))


def intent_get_for_owner(*, owner, intent_id) -> PaymentIntent:
    """The owner's intent, or NotFound — also when it belongs to someone else."""
    try:
        intent_id = uuid.UUID(str(intent_id))
    except ValueError:
        raise NotFound(_("No payment with this id on your account.")) from None
    intent = (
        PaymentIntent.objects.filter(owner=owner, pk=intent_id)
        .select_related("method", "order")
        .first()
    )
    if intent is None:
        raise NotFound(_("No payment with this id on your account."))
    return intent


def intent_progress(intent: PaymentIntent) -> dict:
    """Confirmations of what was seen at the intent's address, for the customer's page."""
    counted = intent.transfers.filter(kind__in=("matched", "late"), disappeared_at__isnull=True)
    confirmations = [t.confirmations for t in counted]
    seen = min(confirmations) if confirmations else 0
    required = intent.method.confirmations
    return {
        "seen": bool(confirmations),
        "confirmations": seen,
        "required": required,
        # What the page says: "3 of 2" reads as a fault, so past the target it is the target.
        "shown": min(seen, required),
    }


def intent_balance(intent: PaymentIntent) -> dict:
    """What has arrived and what is still due, in base units and in USD at the intent's rate.

    USD figures are rounded down to the cent, so "outstanding" never reads as paid early.
    """
    due = int(intent.amount_base)
    received = int(intent.received_base)
    # Closed instructions (the order was paid otherwise or cancelled) are owed nothing.
    outstanding = 0 if intent.closed_at else max(due - received, 0)
    scale = Decimal(10) ** intent.method.decimals

    def usd_of(units: int) -> Decimal:
        return (Decimal(units) / scale * intent.rate_usd_per_coin).quantize(
            Decimal("0.01"), rounding=ROUND_DOWN
        )

    return {
        "received_base": received,
        "outstanding_base": outstanding,
        "received_usd": usd_of(received),
        # Rounding the amount up made `due` worth a little more than the USD total.
        "outstanding_usd": min(usd_of(outstanding), intent.amount_usd),
    }


def is_watched(intent: PaymentIntent) -> bool:
    """Still watched by the chain watchers (late payments are caught until monitor_until)."""
    return intent.monitor_until > clock.now()


# A watched network whose last good answer is older than this is "down": its methods pause.
HEALTHY_WITHIN = timedelta(minutes=10)


def network_healthy(network: str, *, state=UNREAD) -> bool:
    """False when the watcher of a configured network has not had a good answer lately.
    `state`: the network's ChainState (None when it has none) when the caller read it
    already (with `last_success_at` and `last_error_at`); read here otherwise."""
    # Its own URL only (as configured_networks decides), not every network's settings:
    # every new set of instructions asks.
    if network not in NETWORKS or not api_url(network):
        return True
    if state is UNREAD:
        state = ChainState.objects.filter(network=network).first()
    return _state_healthy(state)


def _state_healthy(state) -> bool:
    """network_healthy's answer for a configured network from its stored state (or None)."""
    if state is None or state.last_success_at is None:
        return state is None or state.last_error_at is None
    return state.last_success_at >= clock.now() - HEALTHY_WITHIN


def chain_states():
    """Every network's watcher state for the review page, in one query: the health of
    each is network_healthy's, read from the states loaded here (not a query each)."""
    states = {state.network: state for state in ChainState.objects.all()}
    configured = set(configured_networks())
    return [
        {
            "network": network,
            "configured": network in configured,
            "state": states.get(network),
            "healthy": network not in configured or _state_healthy(states.get(network)),
        }
        for network in NETWORKS
    ]
