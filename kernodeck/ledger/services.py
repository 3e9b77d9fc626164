"""Balance actions: the only code that appends to the ledger.

Every movement runs in one transaction with the account row locked: read the last entry,
compute the new balance, append. The database refuses a negative balance, a second entry
with the same number, a second charge for an order and a second credit for a cause.
"""

from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from kernodeck.accounts.locks import lock_account
from kernodeck.core import clock
from kernodeck.core.errors import Conflict, InvalidInput
from kernodeck.core.money import money, usd, usd_str
from kernodeck.core.races import retry_lost_races
from kernodeck.core.services import audit_record
from kernodeck.ledger import selectors
from kernodeck.ledger.models import TOPUP_AMOUNTS, EntryKind, LedgerEntry, TopUp, TopUpStatus
from kernodeck.notifications.services import email_enqueue
from kernodeck.orders import locks as order_locks
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders import services as order_services
from kernodeck.orders.models import PaymentState


class InsufficientBalance(Conflict):
    def __init__(self, *, available: Decimal, needed: Decimal):
        super().__init__(
            _(
                "Your available balance is %(available)s; this order needs %(needed)s. "
                "Pending top-ups count only once their payment is confirmed."
            )
            % {"available": money(available), "needed": money(needed)}
        )
        self.available = available
        self.needed = needed


class DeclaredPaymentPending(Conflict):
    """The customer said they sent crypto for this order ("I have paid"); paying from the
    balance too may pay it twice, so it needs an explicit confirmation."""

    def __init__(self, *, order, declared):
        super().__init__(
            _(
                "You said you already sent a payment for order %(reference)s (%(methods)s). "
                "If that transfer arrives after you pay from your balance, you will have paid "
                "twice, and the second payment waits for an operator's review before it is "
                "credited to your balance. Confirm to pay from the balance anyway."
            )
            % {
                "reference": order.reference,
                "methods": ", ".join(str(intent.method) for intent in declared),
            }
        )
        self.declared = declared


def _lock_account(account_id: int):
    return lock_account(account_id)


def _existing(kind, **cause):
    return LedgerEntry.objects.filter(kind=kind, **cause).first()


def _append(*, account_id: int, kind: str, amount: Decimal, actor=None, memo: str = "", **cause):
    """Append one entry under the account lock. Returns (entry, created)."""
    amount = usd(amount)
    with transaction.atomic():
        _lock_account(account_id)
        unique_cause = {k: v for k, v in cause.items() if v is not None}
        if unique_cause:
            existing = _existing(kind, account_id=account_id, **unique_cause)
            if existing is not None:
                return existing, False
        last = LedgerEntry.objects.filter(account_id=account_id).order_by("-sequence").first()
        balance = last.balance_after_usd if last else Decimal("0.00")
        if balance + amount < 0:
            raise InsufficientBalance(available=balance, needed=-amount)
        entry = LedgerEntry.objects.create(
            account_id=account_id,
            sequence=(last.sequence + 1) if last else 1,
            kind=kind,
            amount_usd=amount,
            balance_after_usd=balance + amount,
            created_at=clock.now(),
            actor=actor,
            memo=memo[:300],
            **cause,
        )
        audit_record(
            action=f"ledger.{kind}",
            target=entry,
            actor=actor,
            before={"balance_usd": usd_str(balance)},
            after={"balance_usd": usd_str(entry.balance_after_usd), "amount_usd": usd_str(amount)},
            data={k: str(getattr(v, "pk", v)) for k, v in cause.items() if v is not None},
        )
    return entry, True


# -- top-ups ------------------------------------------------------------------------------


def topup_amounts_message() -> str:
    """What a refused top-up amount is told, in the active language."""
    allowed = ", ".join(money(a, places=0) for a in TOPUP_AMOUNTS)
    return _("Top-ups are exactly %(list)s.") % {"list": allowed}


def _parse_topup_amount(amount) -> Decimal:
    message = topup_amounts_message()
    try:
        value = Decimal(str(amount).strip().replace(" ", ""))
    except ArithmeticError:
        raise InvalidInput(message, field="amount_usd") from None
    if not value.is_finite() or value not in {Decimal(a) for a in TOPUP_AMOUNTS}:
        raise InvalidInput(message, field="amount_usd")
    return usd(value)


def topup_create(*, account, amount_usd, method_code: str):
    """A top-up and its first payment instructions. The balance moves only once paid.

    Refused when the account already has KERNODECK_MAX_OPEN_TOPUPS top-ups waiting for
    payment (409), or asked for too many instructions lately (429).
    """
    from kernodeck.payments import services as payment_services

    amount = _parse_topup_amount(amount_usd)
    payment_services.instructions_throttle_check(account.pk)
    # Refusals, and any rate fetch, before anything is written; read once.
    prepared = payment_services.instructions_prepare(method_code)
    topup, intent = _topup_create(
        account=account, amount=amount, method_code=method_code, prepared=prepared
    )
    payment_services.instructions_throttle_hit(account.pk)
    return topup, intent


@retry_lost_races
def _topup_create(*, account, amount: Decimal, method_code: str, prepared):
    from kernodeck.payments import services as payment_services
    from kernodeck.payments.models import Purpose

    with transaction.atomic():
        _lock_account(account.pk)  # the open top-ups are counted under the account lock
        cap = settings.KERNODECK_MAX_OPEN_TOPUPS
        if selectors.topups_open_count(account=account) >= cap:
            raise Conflict(
                _(
                    "You already have %(n)d top-ups waiting for payment. Pay one of them, or "
                    "wait until their instructions expire, before asking for another."
                )
                % {"n": cap}
            )
        topup = TopUp.objects.create(account=account, amount_usd=amount, created_at=clock.now())
        audit_record(
            action="ledger.topup_created",
            target=topup,
            actor=account,
            after={"amount_usd": usd_str(amount)},
        )
        intent = payment_services.payment_intent_create(
            owner=account,
            method_code=method_code,
            amount_usd=amount,
            purpose=Purpose.TOPUP,
            topup=topup,
            actor=account,
            prepared=prepared,
        )
    return topup, intent


def topup_new_instructions(*, topup: TopUp, method_code: str, actor):
    """New instructions (a new address) for a top-up whose earlier ones are no longer live."""
    from kernodeck.payments import services as payment_services

    payment_services.instructions_throttle_check(topup.account_id)
    # Refusals and any rate fetch before the lock; read once.
    prepared = payment_services.instructions_prepare(method_code)
    intent = _topup_new_instructions(
        topup=topup, method_code=method_code, actor=actor, prepared=prepared
    )
    payment_services.instructions_throttle_hit(topup.account_id)
    return intent


@retry_lost_races
def _topup_new_instructions(*, topup: TopUp, method_code: str, actor, prepared):
    from kernodeck.payments import locks as payment_locks
    from kernodeck.payments import selectors as payment_selectors
    from kernodeck.payments import services as payment_services
    from kernodeck.payments.models import Purpose

    with transaction.atomic():
        topup = payment_locks.lock_topup(topup.pk)  # account, then top-up
        if topup.status != TopUpStatus.AWAITING_PAYMENT:
            raise Conflict(_("This top-up is already credited."))
        intents = list(topup.intents.all())
        live = payment_selectors.live_intent(intents)
        if live is not None:
            raise Conflict(
                _("This top-up already has payment instructions valid until %(until)s UTC.")
                % {"until": live.expires_at.strftime("%Y-%m-%d %H:%M")}
            )
        payment_services.instructions_check_watched_cap(intents)
        return payment_services.payment_intent_create(
            owner=topup.account,
            method_code=method_code,
            amount_usd=topup.amount_usd,
            purpose=Purpose.TOPUP,
            topup=topup,
            actor=actor,
            prepared=prepared,
        )


def topup_credit(*, intent, amount_usd: Decimal, kind=EntryKind.TOPUP_CREDIT, actor=None, memo=""):
    """Credit a top-up's payment to the balance (once per top-up), and mark it credited."""
    from kernodeck.payments import locks as payment_locks

    with transaction.atomic():
        topup = payment_locks.lock_topup(intent.topup_id)  # account, then top-up
        if kind == EntryKind.TOPUP_CREDIT:
            earlier = _existing(EntryKind.TOPUP_CREDIT, topup=topup)
            if earlier is not None and earlier.intent_id != intent.pk:
                raise Conflict(
                    _("This top-up was already credited by another payment; review this one.")
                )
            cause = {"topup": topup, "intent": intent}
        else:
            cause = {"intent": intent}
        entry, _created = _append(
            account_id=topup.account_id,
            kind=kind,
            amount=amount_usd,
            actor=actor,
            memo=memo,
            **cause,
        )
        if topup.status != TopUpStatus.CREDITED:
            topup.status = TopUpStatus.CREDITED
            topup.credited_at = clock.now()
            topup.save(update_fields=["status", "credited_at"])
            audit_record(
                action="ledger.topup_credited",
                target=topup,
                actor=actor,
                after={"entry": entry.pk, "amount_usd": usd_str(entry.amount_usd)},
            )
            email_enqueue(
                account=topup.account,
                event="topup_credited",
                context={
                    "amount_usd": usd_str(entry.amount_usd),
                    "balance_usd": usd_str(entry.balance_after_usd),
                },
                dedupe_key=f"topup_credited:{topup.pk}",
            )
    return entry


def topup_credit_confirmed(*, intent):
    """Called by reconciliation when a top-up payment is confirmed and matched."""
    return topup_credit(intent=intent, amount_usd=intent.topup.amount_usd)


# -- spending and crediting ---------------------------------------------------------------


@retry_lost_races
def order_pay_with_balance(*, order, actor, confirm: bool = False):
    """Charge the order's total to the available balance and settle it, in one transaction.

    Pressing twice, or two concurrent API calls, settle once and charge once. Refused while
    a crypto payment for the order has been seen and not decided; after "I have paid" on
    instructions still watched, only with `confirm` (DeclaredPaymentPending otherwise).
    Settling closes the order's instructions and re-checks a lapsed hold (order_settle).
    """
    from kernodeck.payments import selectors as payment_selectors

    with transaction.atomic():
        order = order_locks.lock_order(order.pk)  # account, then order
        existing = _existing(EntryKind.ORDER_CHARGE, order=order)
        if existing is not None:
            return order, existing
        order_selectors.order_check_payable(order)
        seen = payment_selectors.order_payment_seen(order=order)
        if seen is not None:
            raise Conflict(
                _(
                    "A payment for order %(reference)s has already been seen on the "
                    "blockchain (%(method)s). Wait for it to be confirmed, or contact support "
                    "with the reference, instead of paying again from the balance."
                )
                % {"reference": order.reference, "method": seen.method}
            )
        declared = payment_selectors.order_declared_unverified(order=order)
        if declared and not confirm:
            raise DeclaredPaymentPending(order=order, declared=declared)
        try:
            with transaction.atomic():
                entry, _created = _append(
                    account_id=order.owner_id,
                    kind=EntryKind.ORDER_CHARGE,
                    amount=-order.total_usd,
                    actor=actor,
                    order=order,
                )
        except IntegrityError:
            # The database caught what the lock should have: refuse, change nothing.
            raise Conflict(_("The balance changed meanwhile; please try again.")) from None
        order = order_services.order_settle(
            order=order, actor=actor, cause={"ledger_entry": entry.pk, "paid_with": "balance"}
        )
    return order, entry


@retry_lost_races
def balance_credit_payment(*, intent, amount_usd: Decimal, kind: str, actor, memo: str):
    """Credit (part of) a crypto payment to its owner's balance, with the kind naming its cause."""
    return _append(
        account_id=intent.owner_id,
        kind=kind,
        amount=amount_usd,
        actor=actor,
        memo=memo,
        intent=intent,
    )[0]


@retry_lost_races
def balance_refund_order(*, order, actor, reason: str):
    """Refund a settled order's total to the balance (e.g. provisioning failed). Once."""
    if order.payment_state != PaymentState.SETTLED:
        raise Conflict(_("Only a settled order can be refunded to the balance."))
    return _append(
        account_id=order.owner_id,
        kind=EntryKind.REFUND_CREDIT,
        amount=order.total_usd,
        actor=actor,
        memo=reason,
        order=order,
    )[0]


@retry_lost_races
def balance_adjust(*, account, amount_usd, actor, reason: str):
    """A manual adjustment by an operator, with its reason."""
    if not (reason or "").strip():
        raise InvalidInput(_("Give the reason for the adjustment."), field="reason")
    return _append(
        account_id=account.pk,
        kind=EntryKind.ADJUSTMENT,
        amount=Decimal(amount_usd),
        actor=actor,
        memo=reason,
    )[0]


def extension_charge(*, extension, actor):
    """Charge an extension offer's price to the available balance. Once per extension
    (the database refuses a second charge); the caller holds the extension's lock."""
    try:
        with transaction.atomic():
            entry, _created = _append(
                account_id=extension.order.owner_id,
                kind=EntryKind.EXTENSION_CHARGE,
                amount=-extension.price_usd,
                actor=actor,
                extension=extension,
            )
    except IntegrityError:
        raise Conflict(_("The balance changed meanwhile; please try again.")) from None
    return entry
