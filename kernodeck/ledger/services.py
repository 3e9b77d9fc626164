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
from kernodeck.ledger import locks as ledger_locks
from kernodeck.ledger import selectors
from kernodeck.ledger.models import TOPUP_AMOUNTS, EntryKind, LedgerEntry, TopUp, TopUpStatus
from kernodeck.notifications.services import email_enqueue
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


def topup_amount_parse(amount) -> Decimal:
    """A top-up amount as asked for: exactly one of TOPUP_AMOUNTS, else InvalidInput."""
    message = topup_amounts_message()
    try:
        value = Decimal(str(amount).strip().replace(" ", ""))
    except ArithmeticError:
        raise InvalidInput(message, field="amount_usd") from None
    if not value.is_finite() or value not in {Decimal(a) for a in TOPUP_AMOUNTS}:
        raise InvalidInput(message, field="amount_usd")
    return usd(value)


def topup_open(*, account, amount: Decimal):
    """A new top-up waiting for payment, in the caller's transaction (which then creates its
    payment instructions). Refused when the account already has KERNODECK_MAX_OPEN_TOPUPS
    top-ups waiting for payment (409): they are counted under the account's lock."""
    _lock_account(account.pk)
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
    return topup


def topup_check_awaiting(topup: TopUp) -> None:
    """Refuse new instructions for a top-up already credited (the caller holds its lock)."""
    if topup.status != TopUpStatus.AWAITING_PAYMENT:
        raise Conflict(_("This top-up is already credited."))


def topup_credit(*, intent, amount_usd: Decimal, kind=EntryKind.TOPUP_CREDIT, actor=None, memo=""):
    """Credit a top-up's payment to the balance (once per top-up), and mark it credited."""
    with transaction.atomic():
        topup = ledger_locks.lock_topup(intent.topup_id)  # account, then top-up
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


# -- spending and crediting ---------------------------------------------------------------


def order_charge_existing(*, order):
    """The balance charge that paid the order, if any (one per order)."""
    return _existing(EntryKind.ORDER_CHARGE, order=order)


def order_charge(*, order, actor):
    """Charge the order's total to its owner's balance; the caller holds the order's lock
    (account, then order) and settles it in the same transaction. The database refuses a
    second charge for one order and a balance below zero."""
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
    return entry


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
    # The database refuses an adjustment of 0 (ledger_entry_sign_by_kind): refused here
    # with the reason, as is an amount that is not a number of cents.
    try:
        amount = usd(Decimal(str(amount_usd).strip()))
    except ArithmeticError:
        amount = Decimal(0)
    if not amount.is_finite() or not amount:
        raise InvalidInput(
            _("Give the adjustment in USD: a positive or negative amount, not 0."),
            field="amount_usd",
        )
    return _append(
        account_id=account.pk,
        kind=EntryKind.ADJUSTMENT,
        amount=amount,
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
