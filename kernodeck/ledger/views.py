import csv

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from kernodeck.core.errors import NotFound, ServiceError
from kernodeck.core.forms import add_service_error, fields_html
from kernodeck.core.links import escape_text as _escape
from kernodeck.core.links import link_maker
from kernodeck.core.listing import minute_text_maker
from kernodeck.core.money import money, money_figure
from kernodeck.core.references import with_reference
from kernodeck.core.signedpages import signed_page
from kernodeck.ledger import selectors, services
from kernodeck.ledger.forms import TopUpForm
from kernodeck.ledger.models import EntryKind
from kernodeck.orders import selectors as order_selectors
from kernodeck.payments import selectors as payment_selectors
from kernodeck.payments import services as payment_services
from kernodeck.settlement import orders as settlement_orders
from kernodeck.settlement import topups as settlement_topups

ENTRIES_PER_PAGE = 25


def _pending_rows(found) -> str:
    """The pending top-ups' list items as HTML, made here once per page: an account can
    have hundreds, and a `{% url %}`, a `{% blocktranslate %}` and two filters per line
    (then two variables per line) cost more than the query (the words are the template's
    own message). From `selectors.topups_pending_rows`' tuples, each distinct amount and
    day written once, one `%` per line; "" for none."""
    # The words escaped once: escaping a text is escaping each of its parts (the moment's
    # digits and the link's key need none).
    words = _escape(_("Top-up of %(amount)s USD, %(at)s UTC"))
    url = link_maker("ledger:topup")("\0").replace("%", "%%").replace("\0", "%(pk)s")
    line = f'<li><a href="{url}">{words}</a></li>'
    figure = _figures(translation.get_language(), escaped=True)
    moment = minute_text_maker()
    return mark_safe(  # noqa: S308 - every value in it is escaped
        "".join(
            [
                line % {"pk": pk, "amount": figure(amount), "at": moment(created_at)}
                for pk, amount, created_at in found
            ]
        )
    )


def _figures(language, *, escaped: bool = False):
    """`money_figure` in `language` (escaped for HTML with `escaped`), each distinct
    amount written once for the page."""
    written = {}

    def figure(amount) -> str:
        text = written.get(amount)
        if text is None:
            text = money_figure(amount, language=language)
            text = written[amount] = _escape(text) if escaped else text
        return text

    return figure


def _statement_rows(entries) -> list:
    """The statement's rows as HTML, made here in one pass from `selectors.statement_rows`'
    tuples: the words of the kinds, the column labels and the three links made once for
    the page, every value escaped. The same HTML the template's loop made."""
    kinds = {value: _escape(label) for value, label in EntryKind.choices}
    label = {
        key: _escape(text)
        for key, text in (
            ("date", _("Date")),
            ("what", _("What")),
            ("cause", _("Cause")),
            ("amount", _("Amount")),
            ("balance", _("Balance")),
        )
    }
    order_url = link_maker("orders:detail")
    topup_url = link_maker("ledger:topup")
    intent_url = link_maker("payments:detail")
    topup_word, payment_word, support_word = _("top-up"), _("payment"), _("support")
    figure = _figures(translation.get_language())
    moment = minute_text_maker()
    rows = []
    for sequence, created_at, kind, memo, reference, topup_id, intent_id, amount, after in entries:
        if reference is not None:
            cause = (
                f'<a href="{_escape(order_url(reference))}"><code class="ref">'
                f"{_escape(reference)}</code></a>"
            )
        elif topup_id is not None:
            cause = f'<a href="{topup_url(topup_id)}">{_escape(topup_word)}</a>'
        elif intent_id is not None:
            cause = f'<a href="{intent_url(intent_id)}">{_escape(payment_word)}</a>'
        else:
            cause = _escape(support_word)
        memo = f'<br><span class="muted small">{_escape(memo)}</span>' if memo else ""
        rows.append(
            "<tr>\n"
            f'      <td data-label="#">{sequence}</td>\n'
            f'      <td data-label="{label["date"]}">'
            f"{moment(created_at)}</td>\n"
            f'      <td data-label="{label["what"]}">'
            f"{kinds.get(kind) or _escape(kind)}{memo}</td>\n"
            f'      <td data-label="{label["cause"]}">{cause}</td>\n'
            f'      <td class="num" data-label="{label["amount"]}">{figure(amount)}</td>\n'
            f'      <td class="num" data-label="{label["balance"]}">{figure(after)}</td>\n'
            "    </tr>"
        )
    return mark_safe("".join(rows))  # noqa: S308 - every value in it is escaped


def _balance_page(request, form=None, status=200):
    methods = payment_selectors.methods_overview()
    pending = selectors.topups_pending_rows(account=request.user)
    form = form or TopUpForm(methods=methods)
    entries, available = selectors.statement_listed(account=request.user)
    page = Paginator(entries, ENTRIES_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "ledger/balance.html",
        {
            "available": available,
            "pending_usd": selectors.topups_pending_total(pending),
            "pending": _pending_rows(pending),
            "page": page,
            "statement_rows": _statement_rows(page.object_list),
            "form": form,
            # Shown only where a method is available (the template's condition).
            "form_fields": fields_html(form) if form.fields["method"].choices else "",
            "methods": methods,
        },
        status=status,
    )


@login_required
@signed_page
def balance(request):
    return _balance_page(request)


@login_required
@require_POST
def topup_create(request):
    form = TopUpForm(request.POST, methods=payment_selectors.methods_overview())
    if form.is_valid():
        try:
            _topup, intent = settlement_topups.topup_create(
                account=request.user,
                amount_usd=form.cleaned_data["amount_usd"],
                method_code=form.cleaned_data["method"],
            )
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            return redirect("payments:detail", intent_id=intent.pk)
    return _balance_page(request, form=form, status=422)


def _owned_topup(request, topup_id):
    try:
        return selectors.topup_get_for_owner(account=request.user, topup_id=topup_id)
    except NotFound:
        raise Http404 from None


@login_required
def topup_detail(request, topup_id):
    topup = _owned_topup(request, topup_id)
    intents = list(topup.intents.select_related("method").order_by("-created_at"))
    live = payment_selectors.live_intent(intents)
    return render(
        request,
        "ledger/topup.html",
        {
            "topup": topup,
            "intents": intents,
            "live_intent": live,
            # An operator's decision on one of its payments ends the wait (not "pending").
            "decided_intent": next((i for i in intents if i.resolution), None),
            "methods": payment_selectors.methods_overview() if live is None else [],
            "money_seen": payment_selectors.money_seen_among(intents),
        },
    )


def _different_payment_confirm(request, topup, seen, method_code):
    """Money for the top-up is being checked: new instructions only for a different
    payment (issue 23); the same step as an order's."""
    return render(
        request,
        "payments/different_payment_confirm.html",
        {
            "money_seen": seen,
            "method_code": method_code,
            "action": reverse("ledger:topup_pay", args=[topup.pk]),
            "back_url": reverse("ledger:topup", args=[topup.pk]),
        },
    )


@login_required
@require_POST
def topup_pay(request, topup_id):
    topup = _owned_topup(request, topup_id)
    method_code = request.POST.get("method", "")
    different_payment = request.POST.get("different_payment") == "yes"
    try:
        intent = settlement_topups.topup_new_instructions(
            topup=topup,
            method_code=method_code,
            actor=request.user,
            different_payment=different_payment,
        )
    except payment_services.PaymentsSeen as exc:
        return _different_payment_confirm(request, topup, exc.seen, method_code)
    except ServiceError as exc:
        messages.error(request, exc.message)
        return redirect("ledger:topup", topup_id=topup.pk)
    return redirect("payments:detail", intent_id=intent.pk)


@login_required
def statement_csv(request):
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="kernodeck-statement.csv"'
    writer = csv.writer(response)
    writer.writerow(
        ["sequence", "date_utc", "kind", "amount_usd", "balance_after_usd", "cause", "memo"]
    )
    for entry in selectors.statement(account=request.user).order_by("sequence"):
        writer.writerow(
            [
                entry.sequence,
                entry.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                entry.kind,
                f"{entry.amount_usd:.2f}",
                f"{entry.balance_after_usd:.2f}",
                selectors.entry_cause(entry),
                entry.memo,
            ]
        )
    return response


def _pay_with_balance_confirm(request, order, *, warning=""):
    """The confirm step of paying from the balance: the amount, and what remains after."""
    available = selectors.balance_available(account=request.user)
    hidden = {"confirm": "yes"}
    if warning:
        hidden["declared_seen"] = "yes"
    return render(
        request,
        "confirm.html",
        {
            "title": _("Pay order %(reference)s from your balance?")
            % {"reference": order.reference},
            "heading": with_reference(
                _("Pay order %(reference)s from your balance?"), reference=order.reference
            ),
            "figures": [
                (_("Amount to pay"), money(order.total_usd)),
                (_("Available balance now"), money(available)),
                (_("Balance left afterwards"), money(available - order.total_usd)),
            ],
            "warning": warning,
            "confirm_label": _("Pay %(amount)s from the balance")
            % {"amount": money(order.total_usd)},
            "confirm_safe": not warning,
            "cancel_label": _("Back to the order, pay nothing"),
            "cancel_url": reverse("orders:detail", args=[order.reference]),
            "hidden": hidden,
        },
    )


@login_required
@require_POST
def pay_with_balance(request, reference):
    """Pay an order from the balance, always after a confirm step showing the figures.

    The first POST (from the order page) only shows the step; its form posts confirm=yes.
    When the customer said "I have paid" for this order, the step also explains the risk
    of paying twice, and only a form that showed that risk (declared_seen=yes) may pay.
    """
    try:
        order = order_selectors.order_get_for_owner(owner=request.user, reference=reference)
    except NotFound:
        raise Http404 from None
    seen = payment_selectors.order_money_seen(order=order)
    if seen:
        # Not even the step: money for the order is being checked (issue 23).
        messages.error(request, payment_services.PaymentsSeen(seen, from_balance=True).message)
        return redirect("orders:detail", reference=order.reference)
    if request.POST.get("confirm") != "yes":
        declared = payment_selectors.order_declared_unverified(order=order)
        warning = (
            services.DeclaredPaymentPending(order=order, declared=declared).message
            if declared
            else ""
        )
        return _pay_with_balance_confirm(request, order, warning=warning)
    try:
        settlement_orders.order_pay_with_balance(
            order=order, actor=request.user, confirm=request.POST.get("declared_seen") == "yes"
        )
    except services.DeclaredPaymentPending as exc:
        # Declared after the step was shown: show it again, with the risk this time.
        return _pay_with_balance_confirm(request, order, warning=exc.message)
    except ServiceError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            _("Order %(reference)s is paid from your balance.") % {"reference": order.reference},
        )
    return redirect("orders:detail", reference=order.reference)
