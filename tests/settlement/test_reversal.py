"""Money that leaves the chain after settlement: a `reversed` case, first in the review
queue, alerted, decided by an operator (suspend, ask again, accept the loss), each in the
customer's timeline; a top-up's credit is taken back without a negative balance."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from kernodeck.core import clock
from kernodeck.core.errors import Conflict
from kernodeck.core.models import AuditEvent
from kernodeck.ledger import selectors as ledger_selectors
from kernodeck.ledger import services as ledger_services
from kernodeck.ledger.models import LedgerEntry
from kernodeck.orders.models import Order, RentalState
from kernodeck.orders.timeline import timeline_entries
from kernodeck.payments import review, review_selectors, services, watching
from kernodeck.payments.models import (
    IntentException,
    IntentStatus,
    PaymentIntent,
    ReversalDecision,
    Transfer,
)
from kernodeck.provisioning.models import Alert, AlertKind
from kernodeck.settlement import allocation, reversal, topups
from tests.constraint_races import needs_postgres, race, unexpected
from tests.factories import make_offer, make_order, make_user
from tests.loopback import LoopbackServer
from tests.payments.esplora_chain import EsploraChain

pytestmark = pytest.mark.django_db


@pytest.fixture
def server(settings):
    settings.KERNODECK_WATCH_BLOCK_SCAN = True
    with LoopbackServer() as server:
        settings.KERNODECK_BITCOIN_ESPLORA_URL = server.url
        yield server


@pytest.fixture
def chain(server):
    return EsploraChain(server, at=clock.now() - timedelta(minutes=10))


def order_intent():
    order = make_order(offer=make_offer(prices={3: "100.00", 7: "970.00", 30: "800.00"}))
    return services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )


def topup_intent(amount="100"):
    _topup, intent = topups.topup_create(
        account=make_user(), amount_usd=amount, method_code="btc-bitcoin"
    )
    return intent


def fresh(intent) -> PaymentIntent:
    return PaymentIntent.objects.get(pk=intent.pk)


def settle_then_double_spend(chain, *intents):
    """Each intent paid, confirmed 6 times (allocated), then a 7-block reorg whose new
    branch double-spends every payment."""
    watching.watch_network("bitcoin")
    txids = [chain.pay(i.address, i.amount_units) for i in intents]
    chain.mine(at=clock.now())
    chain.mine(at=clock.now(), count=5, include=False)
    watching.watch_network("bitcoin")
    for intent in intents:
        assert fresh(intent).status == IntentStatus.ALLOCATED
    assert {t.confirmations for t in Transfer.objects.all()} == {6}
    chain.reorg(6)
    for txid in txids:
        chain.drop(txid)  # the replacing branch spends the same coins elsewhere
    chain.mine(at=clock.now(), count=7, include=False)
    watching.watch_network("bitcoin")


def test_a_payment_confirmed_6_times_then_double_spent_is_a_reversed_case_listed_first(
    configured, fresh_rates, server, chain
):
    older = order_intent()  # an ordinary case, older than the reversal
    PaymentIntent.objects.filter(pk=older.pk).update(
        status=IntentStatus.UNDERPAID, created_at=clock.now() - timedelta(days=1)
    )
    intent = order_intent()
    settle_then_double_spend(chain, intent)

    intent = fresh(intent)
    assert Transfer.objects.get(intent=intent).disappeared_at is not None
    assert (intent.status, intent.exception) == (IntentStatus.ALLOCATED, IntentException.REVERSED)
    assert intent.reversed_base == intent.amount_base
    assert intent.order.payment_state == "settled"  # nothing moves before the operator
    assert [i.pk for i in review_selectors.review_intents()] == [intent.pk, older.pk]
    alert = Alert.objects.get(kind=AlertKind.PAYMENT_REVERSED)
    assert (alert.order_id, alert.resolved_at) == (intent.order_id, None)
    assert str(intent.order.reference) in alert.message
    assert AuditEvent.objects.filter(action="payment.reversed", target_id=str(intent.pk)).exists()
    labels = [
        e["label"] for e in timeline_entries(order=intent.order, events=order_events(intent))
    ]
    assert any(label.startswith("A payment for this order (") for label in labels)

    watching.watch_network("bitcoin")  # a later pass changes nothing, raises nothing new
    assert Alert.objects.filter(kind=AlertKind.PAYMENT_REVERSED).count() == 1
    assert AuditEvent.objects.filter(action="payment.reversed").count() == 1


def order_events(intent):
    return AuditEvent.objects.filter(
        target_type="orders.order", target_id=str(intent.order_id)
    ).order_by("created_at", "pk")


def reversed_order_case(chain):
    intent = order_intent()
    settle_then_double_spend(chain, intent)
    return fresh(intent)


@pytest.mark.parametrize(
    ("decision", "label"),
    [
        (ReversalDecision.SUSPENDED, "Reversed payment: the rental is suspended"),
        (ReversalDecision.REPAY, "Reversed payment: please pay this order again"),
        (ReversalDecision.LOSS_ACCEPTED, "Reversed payment: nothing is asked of you"),
    ],
)
def test_the_three_decisions_are_audited_and_shown_to_the_customer(
    configured, fresh_rates, server, chain, decision, label
):
    intent = reversed_order_case(chain)
    Order.objects.filter(pk=intent.order_id).update(rental_state=RentalState.ACTIVE)
    operator = make_user(staff=True)

    reversal.reversal_decide(
        intent_id=intent.pk, decision=decision, actor=operator, reason="double spend"
    )

    intent = fresh(intent)
    assert (intent.reversal_decision, intent.reversal_decided_by) == (decision, operator)
    order = Order.objects.get(pk=intent.order_id)
    suspended = decision == ReversalDecision.SUSPENDED
    assert (order.rental_state == RentalState.SUSPENDED) == suspended
    assert not review_selectors.review_intents().filter(pk=intent.pk).exists()
    assert Alert.objects.get(kind=AlertKind.PAYMENT_REVERSED).resolved_at is not None
    assert AuditEvent.objects.filter(
        action=f"payment.reversal_{decision}", target_id=str(intent.pk), actor=operator
    ).exists()
    entries = timeline_entries(order=order, events=order_events(intent))
    assert (label, "double spend") in [(e["label"], e["detail"]) for e in entries]
    with pytest.raises(Conflict):
        reversal.reversal_decide(
            intent_id=intent.pk, decision=decision, actor=operator, reason="again"
        )


def test_suspending_a_rental_that_is_not_running_is_refused(
    configured, fresh_rates, server, chain
):
    intent = reversed_order_case(chain)  # queued, never delivered
    with pytest.raises(Conflict):
        reversal.reversal_decide(
            intent_id=intent.pk,
            decision=ReversalDecision.SUSPENDED,
            actor=make_user(staff=True),
            reason="x",
        )
    assert fresh(intent).reversal_decision == ""


def test_a_reversed_top_up_is_taken_back_up_to_the_balance_never_below_zero(
    configured, fresh_rates, server, chain
):
    kept, spent = topup_intent(), topup_intent()
    settle_then_double_spend(chain, kept, spent)
    for intent in (kept, spent):
        assert fresh(intent).exception == IntentException.REVERSED
        assert ledger_selectors.balance_available(account=intent.owner) == Decimal("100.00")
    # The second customer spent 30 of the 100 before the reversal.
    ledger_services.balance_adjust(
        account=spent.owner, amount_usd="-30", actor=None, reason="spent"
    )
    operator = make_user(staff=True)

    for intent in (kept, spent):
        reversal.reversal_decide(
            intent_id=intent.pk,
            decision=ReversalDecision.SUSPENDED,
            actor=operator,
            reason="double spend",
        )

    assert ledger_selectors.balance_available(account=kept.owner) == Decimal("0.00")
    assert ledger_selectors.balance_available(account=spent.owner) == Decimal("0.00")
    decided = AuditEvent.objects.get(
        action="payment.reversal_suspended", target_id=str(spent.pk)
    ).after
    lost = reversal.reversed_usd(fresh(spent))
    assert decided["debited_usd"] == "70.00"
    assert Decimal(decided["not_recovered_usd"]) == lost - Decimal("70.00") > 0
    assert AuditEvent.objects.filter(action="ledger.topup_reversed").count() == 2


def test_the_case_page_shows_the_reversal_and_records_the_decision(
    configured, fresh_rates, server, chain
):
    intent = reversed_order_case(chain)
    operator = make_user(staff=True)
    for app_label, codename in (("payments", "review_payment"), ("ledger", "adjust_balance")):
        operator.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client = Client()
    client.force_login(operator)
    queue = client.get(reverse("backoffice:review_queue")).content.decode()
    assert "Reversed after settlement: 0.01 BTC left the chain." in queue
    url = reverse("backoffice:intent_case", args=[intent.pk])
    page = client.get(url).content.decode()
    assert 'value="reversal"' in page and 'value="decision"' not in page

    response = client.post(
        url, {"form": "reversal", "decision": "repay", "reason": "double spend"}
    )

    assert response.status_code == 302
    assert fresh(intent).reversal_decision == ReversalDecision.REPAY
    assert "Customer asked to pay again by" in client.get(url).content.decode()
    order = Order.objects.get(pk=intent.order_id)
    repayment = services.payment_intent_create_for_order(
        order=order, method_code="btc-bitcoin", actor=order.owner
    )
    page = client.get(url).content.decode()
    assert "The customer asked for instructions to pay it again on" in page
    assert reverse("backoffice:intent_case", args=[repayment.pk]) in page


# -- races (PostgreSQL) -----------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_money_leaving_while_an_operator_credits_it_never_leaves_a_credit_without_a_case(
    configured, fresh_rates
):
    """The operator's decision against the watcher: the watcher marks the transfer gone
    and reconciles while an operator credits the payment. Either the credit is refused
    (the watcher came first: nothing is received) or it stands and is a reversed case."""
    needs_postgres()
    operator = make_user(staff=True)
    for round_ in range(3):
        intent = order_intent()
        PaymentIntent.objects.filter(pk=intent.pk).update(
            expires_at=clock.now() - timedelta(hours=1)
        )
        transfer = review.review_record_transfer(
            intent_id=intent.pk, txid=f"ab{round_}" * 8, amount="0.001", actor=operator, reason="x"
        )
        assert fresh(intent).status == IntentStatus.LATE

        def run(i, intent=intent, transfer=transfer):
            if i == 0:
                return allocation.review_credit_balance(
                    intent_id=intent.pk, actor=operator, reason="credited"
                )
            Transfer.objects.filter(pk=transfer.pk).update(disappeared_at=clock.now())
            return watching.payment_intent_reconcile(intent_id=intent.pk)

        outcomes = race(run, 2)

        assert not unexpected(outcomes), outcomes
        intent = fresh(intent)
        credited = LedgerEntry.objects.filter(intent=intent).exists()
        assert credited == (intent.resolution == "credited"), outcomes
        assert credited == (intent.exception == IntentException.REVERSED), outcomes
        assert Alert.objects.filter(kind=AlertKind.PAYMENT_REVERSED).count() == (
            Alert.objects.filter(kind=AlertKind.PAYMENT_REVERSED).values("key").distinct().count()
        )


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_reversal_decided_while_the_watcher_passes_is_decided_once_and_reversed_once(
    configured, fresh_rates, server, chain
):
    needs_postgres()
    intent = reversed_order_case(chain)
    operator = make_user(staff=True)

    def run(i):
        if i < 2:
            return reversal.reversal_decide(
                intent_id=intent.pk,
                decision=ReversalDecision.LOSS_ACCEPTED,
                actor=operator,
                reason=f"accepted {i}",
            )
        return watching.watch_network("bitcoin")

    outcomes = race(run, 3)

    assert not unexpected(outcomes), outcomes
    assert sum(isinstance(o, Conflict) for o in outcomes[:2]) == 1, outcomes
    intent = fresh(intent)
    assert (intent.exception, intent.reversal_decision) == (
        IntentException.REVERSED,
        ReversalDecision.LOSS_ACCEPTED,
    )
    assert AuditEvent.objects.filter(action="payment.reversed").count() == 1
    assert AuditEvent.objects.filter(action="payment.reversal_loss_accepted").count() == 1
    assert Alert.objects.get(kind=AlertKind.PAYMENT_REVERSED).resolved_at is not None


@pytest.mark.parametrize(
    ("language", "badge", "waiting", "decided"),
    [
        (
            "en",
            "Reversed after settlement",
            "An operator is looking at it",
            "we accepted the loss and nothing changes for you",
        ),
        (
            "es",
            "Revertido después de la liquidación",
            "Un operador lo está revisando",
            "asumimos la pérdida y para usted no cambia nada",
        ),
    ],
)
def test_the_customer_reads_the_reversal_on_the_top_up_and_payment_pages(
    configured, fresh_rates, server, chain, language, badge, waiting, decided
):
    intent = topup_intent()
    settle_then_double_spend(chain, intent)
    customer = Client(HTTP_ACCEPT_LANGUAGE=language)
    customer.force_login(intent.owner)
    pages = [
        reverse("ledger:topup", args=[intent.topup_id]),
        reverse("payments:detail", args=[intent.pk]),
    ]
    for url in pages:
        page = customer.get(url).content.decode()
        assert badge in page and waiting in page, url

    reversal.reversal_decide(
        intent_id=intent.pk,
        decision=ReversalDecision.LOSS_ACCEPTED,
        actor=make_user(staff=True),
        reason="small amount",
    )
    for url in pages:
        page = customer.get(url).content.decode()
        assert badge in page and decided in page and waiting not in page, url


@pytest.mark.parametrize(
    ("language", "words", "button"),
    [
        ("en", "A payment for this order left the blockchain after it counted", "Pay again"),
        ("es", "Un pago de este pedido salió de la cadena de bloques", "Volver a pagar"),
    ],
)
def test_asking_again_reopens_payment_of_the_reversed_amount_on_the_settled_order(
    configured, fresh_rates, server, chain, language, words, button
):
    intent = reversed_order_case(chain)
    order = Order.objects.get(pk=intent.order_id)
    customer = Client(HTTP_ACCEPT_LANGUAGE=language)
    customer.force_login(order.owner)
    page_url = reverse("orders:detail", args=[order.reference])
    assert button not in customer.get(page_url).content.decode()  # not before the decision
    with pytest.raises(Conflict):  # a settled order gives no instructions by itself
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )

    reversal.reversal_decide(
        intent_id=intent.pk,
        decision=ReversalDecision.REPAY,
        actor=make_user(staff=True),
        reason="double spend",
    )
    page = customer.get(page_url).content.decode()
    assert words in page and button in page and "970" in page
    # The customer had said "I have paid" for the reversed payment: no second-transfer step.
    PaymentIntent.objects.filter(pk=intent.pk).update(declared_at=clock.now())
    answer = customer.post(reverse("order_pay", args=[order.reference]), {"method": "btc-bitcoin"})

    repayment = PaymentIntent.objects.get(repays=intent)
    assert answer.status_code == 302 and answer.url == reverse(
        "payments:detail", args=[repayment.pk]
    )
    assert (repayment.order_id, repayment.amount_usd) == (order.pk, Decimal("970.00"))
    assert repayment.address != intent.address
    order.refresh_from_db()
    assert order.payment_state == "settled"  # the order and its rental stay as they are
    assert AuditEvent.objects.filter(
        action="order.repayment_instructions_created", target_id=str(order.pk)
    ).exists()
    # Asked twice (a second click): the live instructions are named, none are added.
    with pytest.raises(Conflict):
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )
    assert PaymentIntent.objects.filter(repays=intent).count() == 1

    chain.pay(repayment.address, repayment.amount_units)
    chain.mine(at=clock.now(), count=2)
    watching.watch_network("bitcoin")

    assert fresh(repayment).status == IntentStatus.ALLOCATED
    assert AuditEvent.objects.filter(action="order.repaid", target_id=str(order.pk)).count() == 1
    assert AuditEvent.objects.filter(action="payment.repaid", target_id=str(intent.pk)).exists()
    labels = [e["label"] for e in timeline_entries(order=order, events=order_events(intent))]
    assert labels  # the timeline still reads (its words are checked by test_timeline)
    page = customer.get(page_url).content.decode()
    assert button not in page and words not in page
    with pytest.raises(Conflict):  # paid again: nothing more is owed
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )


@pytest.mark.django_db(transaction=True)
def test_ask_again_decided_by_two_operators_while_the_customer_asks_is_decided_once(
    configured, fresh_rates, server, chain
):
    needs_postgres()
    intent = reversed_order_case(chain)
    order = Order.objects.get(pk=intent.order_id)
    operator = make_user(staff=True)

    def run(i):
        if i < 2:
            return reversal.reversal_decide(
                intent_id=intent.pk,
                decision=ReversalDecision.REPAY,
                actor=operator,
                reason=f"ask again {i}",
            )
        return services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )

    outcomes = race(run, 4)

    assert not unexpected(outcomes), outcomes
    assert sum(isinstance(o, Conflict) for o in outcomes[:2]) == 1, outcomes
    assert fresh(intent).reversal_decision == ReversalDecision.REPAY
    assert AuditEvent.objects.filter(action="payment.reversal_repay").count() == 1
    assert AuditEvent.objects.filter(action="order.payment_reversal_decided").count() == 1
    # The customer's requests were refused before the decision or made one set, never two.
    assert PaymentIntent.objects.filter(repays=intent).count() <= 1
    if not PaymentIntent.objects.filter(repays=intent).exists():
        services.payment_intent_create_for_order(
            order=order, method_code="btc-bitcoin", actor=order.owner
        )
    assert PaymentIntent.objects.filter(repays=intent).count() == 1
