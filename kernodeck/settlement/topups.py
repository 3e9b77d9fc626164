"""A top-up's money events: opened with its payment instructions, new instructions."""

from django.db import transaction
from django.utils.translation import gettext as _

from kernodeck.core.errors import Conflict
from kernodeck.core.races import retry_lost_races
from kernodeck.ledger import locks as ledger_locks
from kernodeck.ledger import services as ledger_services
from kernodeck.ledger.models import TopUp
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.payments.models import Purpose


def topup_create(*, account, amount_usd, method_code: str):
    """A top-up and its first payment instructions. The balance moves only once paid.

    Refused when the account already has KERNODECK_MAX_OPEN_TOPUPS top-ups waiting for
    payment (409), or asked for too many instructions lately (429).
    """
    amount = ledger_services.topup_amount_parse(amount_usd)
    payment_services.instructions_throttle_check(account.pk)
    # Refusals, and any rate fetch, before anything is written; read once.
    prepared = payment_services.instructions_prepare(method_code, purpose=Purpose.TOPUP)
    topup, intent = _topup_create(
        account=account, amount=amount, method_code=method_code, prepared=prepared
    )
    payment_services.instructions_throttle_hit(account.pk)
    return topup, intent


@retry_lost_races
def _topup_create(*, account, amount, method_code: str, prepared):
    with transaction.atomic():
        topup = ledger_services.topup_open(account=account, amount=amount)
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


def topup_new_instructions(
    *, topup: TopUp, method_code: str, actor, different_payment: bool = False
):
    """New instructions (a new address) for a top-up whose earlier ones are no longer live,
    refused while money seen for it is not decided (unless `different_payment`)."""
    payment_services.instructions_throttle_check(topup.account_id)
    # Refusals and any rate fetch before the lock; read once.
    prepared = payment_services.instructions_prepare(method_code, purpose=Purpose.TOPUP)
    intent = _topup_new_instructions(
        topup=topup,
        method_code=method_code,
        actor=actor,
        prepared=prepared,
        different_payment=different_payment,
    )
    payment_services.instructions_throttle_hit(topup.account_id)
    return intent


@retry_lost_races
def _topup_new_instructions(*, topup: TopUp, method_code: str, actor, prepared, different_payment):
    with transaction.atomic():
        topup = ledger_locks.lock_topup(topup.pk)  # account, then top-up
        ledger_services.topup_check_awaiting(topup)
        intents = list(topup.intents.select_related("method"))
        live = payment_selectors.live_intent(intents)
        if live is not None:
            raise Conflict(
                _("This top-up already has payment instructions valid until %(until)s UTC.")
                % {"until": live.expires_at.strftime("%Y-%m-%d %H:%M")}
            )
        payment_services.instructions_check_money_seen(
            intents, different_payment=different_payment
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
            different_payment=different_payment,
        )
