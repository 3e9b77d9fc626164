"""Operators' screens beyond the Django admin: the payment review queue, chain health."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import translation
from django.utils.http import urlencode
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _

from kernodeck.accounts.permissions import permission_required, require_permission
from kernodeck.backoffice.forms import (
    DecisionForm,
    RecordTransferForm,
    ReversalForm,
    TransferResolveForm,
)
from kernodeck.core.errors import ServiceError
from kernodeck.core.forms import add_service_error
from kernodeck.core.links import escape_text as _escape
from kernodeck.core.links import link_maker
from kernodeck.core.listing import minute_text_maker, truncate_chars, truncation_text
from kernodeck.core.money import coin_figure, money_figure
from kernodeck.core.signedpages import signed_page
from kernodeck.payments import review, review_selectors, selectors
from kernodeck.payments.models import PaymentIntent, Transfer
from kernodeck.payments.vocabulary import intent_state, intent_state_key
from kernodeck.settlement import allocation, reversal

REVIEW = "payments.review_payment"
DECISIONS = {
    "settle": allocation.review_accept_and_settle,
    "credit": allocation.review_credit_balance,
    "refunded": review.review_mark_refunded,
}
# The decisions that count the received money (short of its confirmations only when the
# operator ticks the explicit confirmation).
COUNTING_DECISIONS = ("settle", "credit")
# What each posted action needs on top of REVIEW; crediting mints balance.
ACTION_PERMISSIONS = {
    "decision:settle": (REVIEW,),
    "decision:credit": (REVIEW, "ledger.adjust_balance"),
    "decision:refunded": (REVIEW,),
    "record": (REVIEW, "payments.record_transfer"),
    # A reversed top-up's credit taken back is a balance adjustment.
    "reversal": (REVIEW, "ledger.adjust_balance"),
}


# The queue can grow to thousands of cases when a chain misbehaves: page it.
REVIEW_PER_PAGE = 50


@permission_required(REVIEW)
@signed_page
def review_queue(request):
    """Cases waiting for an operator, 50 a page (`page` for payments, `transfers_page` for
    unallocated transfers, each list paged on its own)."""
    intents = Paginator(review_selectors.review_intents_listed(), REVIEW_PER_PAGE).get_page(
        request.GET.get("page")
    )
    transfers = Paginator(review_selectors.review_transfers_listed(), REVIEW_PER_PAGE).get_page(
        request.GET.get("transfers_page")
    )
    return render(
        request,
        "backoffice/review_queue.html",
        {
            "intents": intents,
            "transfers": transfers,
            "intent_rows": _intent_rows(intents.object_list),
            "transfer_rows": _transfer_rows(transfers.object_list),
            "transfers_page_param": urlencode({"page": intents.number}),
            "intents_page_param": urlencode({"transfers_page": transfers.number}),
            "chains": selectors.chain_states(),
        },
    )


def _escaped_link(url_name: str):
    """`link_maker`'s link escaped for an attribute, escaped once (a key needs none)."""
    before, after = _escape(link_maker(url_name)("\0")).split("\0")
    return lambda key: f"{before}{key}{after}"


def _intent_rows(intents) -> str:
    """The payments' rows of the queue as HTML, made here in one pass from
    review_selectors.ReviewIntentRow: the column labels, the top-up's words, each state's
    badge and each method's name made once for the page, every value escaped. The same
    HTML the template's loop made."""
    label = _labels(
        ("created", _("Created")),
        ("payment", _("Payment")),
        ("for", _("For")),
        ("customer", _("Customer")),
        ("status", _("Status")),
        ("why", _("Why")),
    )
    topup_words = _("Top-up of %(amount)s USD")
    method_words = _("%(asset)s on %(network)s")  # str(PaymentMethod)
    language = translation.get_language()
    case_url = _escaped_link("backoffice:intent_case")
    moment = minute_text_maker()
    badges, methods = {}, {}
    rows = []
    for intent in intents:
        state_key = intent_state_key(intent)
        badge = badges.get(state_key)
        if badge is None:
            state = intent_state(intent)
            badge = badges[state_key] = (
                f'<span class="badge {_escape(state.tone)}" data-state="{_escape(state.key)}">'
                f"{_escape(state.label)}</span>"
            )
        method_key = (intent.method_asset, intent.method_network)
        method = methods.get(method_key)
        if method is None:
            method = methods[method_key] = _escape(
                method_words % {"asset": intent.method_asset, "network": intent.method_network}
            )
        if intent.order_id is not None:
            purpose = f'<code class="ref">{_escape(intent.order_reference)}</code>'
        else:
            amount = (
                money_figure(intent.topup_amount_usd, language=language)
                if intent.topup_amount_usd is not None
                else ""
            )
            purpose = topup_words % {"amount": _escape(amount)}
        reason = review_selectors.review_reason_text(
            exception=intent.exception,
            reversed_base=intent.reversed_base,
            review_reason=intent.review_reason,
            closed_reason=intent.closed_reason,
            decimals=intent.method_decimals,
            asset=intent.method_asset,
        )
        rows.append(
            "<tr>\n"
            f'      <td data-label="{label["created"]}">{moment(intent.created_at)}</td>\n'
            f'      <td data-label="{label["payment"]}"><a href="{case_url(intent.id)}">'
            f"{method}</a></td>\n"
            f'      <td data-label="{label["for"]}">{purpose}</td>\n'
            f'      <td data-label="{label["customer"]}">{_escape(intent.owner_email)}</td>\n'
            f'      <td data-label="{label["status"]}">{badge}</td>\n'
            f'      <td data-label="{label["why"]}">{_escape(reason)}</td>\n'
            "    </tr>"
        )
    return mark_safe("".join(rows))  # noqa: S308 - every value in it is escaped


def _transfer_rows(transfers) -> str:
    """The unallocated transfers' rows as HTML (review_selectors.ReviewTransferRow), made
    like the payments' (the kinds' words once per page: get_kind_display hashes every
    lazy choice per row)."""
    label = _labels(
        ("first_seen", _("First seen")),
        ("network", _("Network")),
        ("transaction", _("Transaction")),
        ("address", _("Address")),
        ("amount", _("Amount")),
        ("kind", _("Kind")),
    )
    kinds = {value: _escape(text) for value, text in Transfer._meta.get_field("kind").choices}
    case_url = _escaped_link("backoffice:transfer_case")
    moment = minute_text_maker()
    ellipsis = truncation_text()
    rows = []
    for transfer in transfers:
        txid = _escape(truncate_chars(transfer.txid, 20, ellipsis=ellipsis))
        address = _escape(truncate_chars(transfer.address, 24, ellipsis=ellipsis))
        rows.append(
            "<tr>\n"
            f'      <td data-label="{label["first_seen"]}">{moment(transfer.first_seen_at)}'
            f'</td><td data-label="{label["network"]}">{_escape(transfer.network)}</td>\n'
            f'      <td data-label="{label["transaction"]}">'
            f'<a href="{case_url(transfer.id)}">'
            f"<code>{txid}</code></a></td>\n"
            f'      <td data-label="{label["address"]}"><code>'
            f"{address}</code></td>"
            f'<td class="num" data-label="{label["amount"]}">'
            f"{_escape(review_selectors.transfer_amount_text(transfer))}</td>\n"
            f'      <td data-label="{label["kind"]}"><span class="badge warn">'
            f"{kinds.get(transfer.kind) or _escape(transfer.kind)}</span></td>\n"
            "    </tr>"
        )
    return mark_safe("".join(rows))  # noqa: S308 - every value in it is escaped


def _labels(*pairs) -> dict[str, str]:
    """The columns' labels (data-label, for the phone layout), escaped, once per page."""
    return {key: _escape(text) for key, text in pairs}


@permission_required(REVIEW)
def intent_case(request, intent_id):
    intent = get_object_or_404(
        PaymentIntent.objects.select_related("method", "order", "owner", "topup"), pk=intent_id
    )
    transfers = review_selectors.transfers_shown(
        intent.transfers.select_related("recorded_by").order_by("first_seen_at")
    )
    unconfirmed = review_selectors.intent_unconfirmed(intent, transfers=transfers)
    settle_offered = allocation.review_settle_offered(intent)
    decision_form = DecisionForm(
        request.POST if request.POST.get("form") == "decision" else None,
        unconfirmed=unconfirmed,
        actions=None if settle_offered else ("credit", "refunded"),
    )
    # Its own ids: the decision form has a "reason" field too.
    record_form = RecordTransferForm(
        request.POST if request.POST.get("form") == "record" else None, auto_id="id_record_%s"
    )
    reversal_form = ReversalForm(
        request.POST if request.POST.get("form") == "reversal" else None, auto_id="id_rev_%s"
    )
    if request.method == "POST":
        try:
            if reversal_form.is_bound and reversal_form.is_valid():
                require_permission(request, *ACTION_PERMISSIONS["reversal"])
                reversal.reversal_decide(
                    intent_id=intent.pk,
                    decision=reversal_form.cleaned_data["decision"],
                    actor=request.user,
                    reason=reversal_form.cleaned_data["reason"],
                )
                messages.success(request, _("Decision recorded."))
                return redirect("backoffice:intent_case", intent_id=intent.pk)
            if decision_form.is_bound and decision_form.is_valid():
                action = decision_form.cleaned_data["action"]
                require_permission(request, *ACTION_PERMISSIONS[f"decision:{action}"])
                if action == "settle" and allocation.review_settle_credits_beyond_due(intent):
                    # More than the top-up's amount goes to the balance: as "credit" does.
                    require_permission(request, *ACTION_PERMISSIONS["decision:credit"])
                decide = DECISIONS[action]
                extra = {}
                if action in COUNTING_DECISIONS:
                    extra["unconfirmed_accepted"] = decision_form.cleaned_data.get(
                        "accept_unconfirmed", False
                    )
                decide(
                    intent_id=intent.pk,
                    actor=request.user,
                    reason=decision_form.cleaned_data["reason"],
                    **extra,
                )
                messages.success(request, _("Decision recorded."))
                return redirect("backoffice:intent_case", intent_id=intent.pk)
            if record_form.is_bound and record_form.is_valid():
                require_permission(request, *ACTION_PERMISSIONS["record"])
                review.review_record_transfer(
                    intent_id=intent.pk, actor=request.user, **record_form.cleaned_data
                )
                messages.success(request, _("Transfer recorded and reconciled."))
                return redirect("backoffice:intent_case", intent_id=intent.pk)
        except ServiceError as exc:
            bound = [f for f in (reversal_form, decision_form) if f.is_bound]
            add_service_error(bound[0] if bound else record_form, exc)
    current = selectors.rate_current(intent.method.asset)
    return render(
        request,
        "backoffice/intent_case.html",
        {
            "intent": intent,
            "amount": coin_figure(intent.amount_units, intent.method.decimals),
            "received": coin_figure(int(intent.received_base), intent.method.decimals),
            "received_usd": review.received_usd(intent),
            "received_usd_now": review.received_usd(intent, usd_per_coin=current.usd_per_coin)
            if current
            else None,
            "rate_now": current,
            "reason": review_selectors.review_reason_display(intent),
            "transfers": transfers,
            "unconfirmed": unconfirmed,
            "settle_offered": settle_offered,
            "decision_form": decision_form,
            "record_form": record_form,
            "reversal_form": reversal_form,
            "reversed_usd": reversal.reversed_usd(intent) if intent.exception else None,
            "reversed": coin_figure(int(intent.reversed_base), intent.method.decimals),
        },
    )


@permission_required(REVIEW)
def transfer_case(request, transfer_id):
    transfer = get_object_or_404(
        review_selectors.with_chain_tip(Transfer.objects.select_related("intent__method")),
        pk=transfer_id,
    )
    candidates = review_selectors.transfer_candidate_intents(transfer)
    form = TransferResolveForm(request.POST or None, candidates=candidates)
    if request.method == "POST" and form.is_valid():
        try:
            review.review_transfer_resolve(
                transfer_id=transfer.pk,
                actor=request.user,
                note=form.cleaned_data["note"],
                intent_id=form.cleaned_data["intent"],
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, _("Transfer reviewed."))
            return redirect("backoffice:review_queue")
    return render(
        request,
        "backoffice/transfer_case.html",
        {
            "transfer": transfer,
            "amount": review_selectors.transfer_amount_text(transfer),
            "confirmations": review_selectors.confirmations_now(transfer),
            "form": form,
        },
    )


# The posted actions of each case page and their permissions (read by the matrix test).
intent_case.backoffice_actions = ACTION_PERMISSIONS
transfer_case.backoffice_actions = {"resolve": (REVIEW,)}
