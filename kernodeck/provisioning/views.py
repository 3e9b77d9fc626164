"""The operators' provisioning desk and fleet pages, and the customer's calendar file.

Desk pages need a staff account with `provisioning.operate_rentals` (others get 403);
showing a rental's access details needs `provisioning.view_access` as well and is audited.
Every action is a POST with a confirmation box, and a reason where the move needs one.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache

from kernodeck.accounts.permissions import permission_required
from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.catalog.models import Preparation
from kernodeck.core.errors import NotFound, ServiceError
from kernodeck.core.forms import add_service_error, fields_html
from kernodeck.core.links import escape_text as escape
from kernodeck.core.links import link_maker
from kernodeck.core.listing import minute_text_maker
from kernodeck.core.requests import client_ip
from kernodeck.core.signedpages import signed_page
from kernodeck.orders import selectors as order_selectors
from kernodeck.orders.models import RentalState
from kernodeck.orders.templatetags.order_badges import TONES
from kernodeck.orders.timeline import REFUNDED, rental_refunded
from kernodeck.provisioning import alerts, node_health, selectors, services
from kernodeck.provisioning.forms import (
    ConfirmForm,
    DeliverForm,
    NodeForm,
    NodeStateForm,
    ReasonForm,
    RetryForm,
)
from kernodeck.provisioning.models import DriverCode, NodeState

OPERATE = "provisioning.operate_rentals"
VIEW_ACCESS = "provisioning.view_access"


# -- customer -----------------------------------------------------------------------------


@login_required
def calendar(request, reference):
    """The owner's rental period as an .ics file."""
    try:
        order = order_selectors.order_get_for_owner(owner=request.user, reference=reference)
        body = selectors.rental_calendar(order=order)
    except NotFound:
        raise Http404 from None
    except ServiceError as error:
        messages.error(request, error.message)
        return redirect("orders:detail", reference=reference)
    response = HttpResponse(body, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{order.reference}.ics"'
    return response


# -- the desk -----------------------------------------------------------------------------


def _rental_or_404(reference):
    try:
        return selectors.rental_get(reference=reference)
    except NotFound:
        raise Http404 from None


@permission_required(OPERATE)
@signed_page
def desk(request):
    state = request.GET.get("state", "")
    if state not in RentalState.values:
        state = ""
    # The rows are made here, in one pass, as one text (same HTML as the template's loop
    # over the rows made; "" for none).
    row_html = _desk_row_maker()
    rows = "".join(row_html(row) for row in selectors.desk_page_rows(state=state, limit=300))
    return render(
        request,
        "provisioning/desk.html",
        {
            "rows": mark_safe(rows),  # noqa: S308 - every value in it is escaped
            "state": state,
            "states": RentalState.choices,
            "alerts": selectors.alerts_for_desk(limit=50),
            "releases": selectors.releases_pending_for_desk()[:100],
        },
    )


def _desk_row_maker():
    """A function giving one rental's row of the desk as HTML: the column labels, states,
    preparations and the waiting time's words translated once for the page, the rental's
    link reversed once, every value escaped, the minute written with one formatter."""
    rental_url = link_maker("desk:rental")
    minute_text = minute_text_maker()
    labels = {
        key: escape(text)
        for key, text in (
            ("rental", gettext("Rental")),
            ("state", gettext("State")),
            ("waiting", gettext("Waiting")),
            ("offer", gettext("Offer")),
            ("gpus", gettext("GPUs")),
            ("preparation", gettext("Preparation")),
            ("allocated", gettext("Allocated")),
            ("keys", gettext("Customer SSH keys")),
            ("ends", gettext("Ends")),
        )
    }
    states = {value: escape(label) for value, label in RentalState.choices}
    refunded = escape(REFUNDED)
    preparations = {value: escape(label) for value, label in Preparation.choices}
    waiting_words = gettext("%(d)d d %(h)d h %(m)d min")
    none_yet = f'<span class="muted">{escape(gettext("none yet"))}</span>'
    no_key = f'<span class="badge bad">{escape(gettext("no key"))}</span>'
    reasons: dict[str, str] = {}

    def reason_words(reason: str) -> str:
        # What `{% translate row.order.rental_reason %}` wrote (its doubled percent signs).
        if reason not in reasons:
            reasons[reason] = escape(gettext(reason.replace("%", "%%")).replace("%%", "%"))
        return reasons[reason]

    def waiting(seconds) -> str:
        # What the `rental_duration` filter wrote.
        days, rest = divmod(max(0, int(seconds or 0)), 86400)
        hours, rest = divmod(rest, 3600)
        return escape(waiting_words % {"d": days, "h": hours, "m": rest // 60})

    def row_html(row) -> str:
        order = row["order"]  # a selectors.DeskRental
        if rental_refunded(order):
            badge = f'<span class="badge info">{refunded}</span>'
        else:
            state = order.rental_state
            tone = TONES.get(state, "")
            badge = f'<span class="badge {tone}">{states.get(state) or escape(state)}</span>'
        if order.rental_reason:
            badge += f'<br><span class="small">{reason_words(order.rental_reason)}</span>'
        allocated = "".join(
            f"<code>{escape(a['node'])}</code> [{escape(', '.join(map(str, a['slots'])))}]<br>"
            for a in row["allocation"]
        )
        keys = "".join(
            f'<code class="small">{escape(key if len(key) <= 22 else f"{key[:21]}…")}</code><br>'
            for key in row["keys"]
        )
        preparation = order.preparation
        ends = minute_text(order.ends_at) if order.ends_at else "—"
        return (
            "<tr>\n"
            f'      <td data-label="{labels["rental"]}">'
            f'<a href="{escape(rental_url(order.reference))}">'
            f'<code class="ref">{escape(order.reference)}</code></a><br>'
            f'<span class="muted small">{escape(order.owner_email)}</span></td>\n'
            f'      <td data-label="{labels["state"]}">{badge}</td>\n'
            f'      <td data-label="{labels["waiting"]}">{waiting(row["waiting"])}</td>\n'
            f'      <td data-label="{labels["offer"]}">{escape(order.gpu_model)}</td>\n'
            f'      <td class="num" data-label="{labels["gpus"]}">{escape(order.gpus)}</td>\n'
            f'      <td data-label="{labels["preparation"]}">'
            f"{preparations.get(preparation) or escape(preparation)}</td>\n"
            f'      <td data-label="{labels["allocated"]}">{allocated or none_yet}</td>\n'
            f'      <td data-label="{labels["keys"]}">{keys or no_key}</td>\n'
            f'      <td data-label="{labels["ends"]}">{ends}</td>\n'
            "    </tr>"
        )

    return row_html


@permission_required(OPERATE)
def alert_acknowledge(request, alert_id):
    """An operator took an alert in hand (POST); it leaves the top of the desk."""
    if request.method != "POST":
        return redirect("desk:rentals")
    try:
        alerts.alert_acknowledge(alert_id=alert_id, actor=request.user)
    except ServiceError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, _("Alert acknowledged."))
    return redirect("desk:rentals")


@permission_required(OPERATE)
def rental(request, reference):
    order = _rental_or_404(reference)
    return render(
        request,
        "provisioning/rental.html",
        {
            "order": order,
            "allocation": selectors.allocation_of(order),
            "keys": selectors.ssh_key_fingerprints(order),
            "deliveries": order.deliveries.select_related("created_by").order_by("-created_at"),
            "timeline": order_selectors.order_timeline(order=order, staff=True),
            "can_view_access": request.user.has_perms([OPERATE, VIEW_ACCESS]),
            "waiting": selectors.waiting_seconds(order),
            "steps": node_health.rental_steps(order),
            "failed_attempts": node_health.rental_failed_attempts(order),
            "refund_proposed": node_health.rental_refund_proposed(order),
        },
    )


# action -> (form, service call, title, needs reason)
ACTIONS = {
    "prepare": (
        ConfirmForm,
        lambda order, data, actor: services.rental_prepare(order=order, actor=actor),
        _("Start preparing"),
    ),
    "fail": (
        ReasonForm,
        lambda order, data, actor: services.rental_fail(
            order=order, reason=data["reason"], actor=actor
        ),
        _("Mark preparation failed"),
    ),
    "retry": (
        RetryForm,
        lambda order, data, actor: services.rental_retry(
            order=order, actor=actor, new_slots=data["new_slots"]
        ),
        _("Retry"),
    ),
    "refund": (
        ReasonForm,
        lambda order, data, actor: services.rental_refund(
            order=order, reason=data["reason"], actor=actor
        ),
        _("Refund to the balance (ends the rental)"),
    ),
    "suspend": (
        ReasonForm,
        lambda order, data, actor: services.rental_suspend(
            order=order, reason=data["reason"], actor=actor
        ),
        _("Suspend access (the clock keeps running)"),
    ),
    "resume": (
        ReasonForm,
        lambda order, data, actor: services.rental_resume(
            order=order, reason=data["reason"], actor=actor
        ),
        _("Resume access"),
    ),
    "end": (
        ReasonForm,
        lambda order, data, actor: services.rental_end(
            order=order, reason=data["reason"], actor=actor
        ),
        _("End now (frees the slots, erases the secrets)"),
    ),
}


# Actions that take something away from the customer: their button is styled as such.
DESTRUCTIVE_ACTIONS = {"fail", "refund", "suspend", "end"}


@permission_required(OPERATE)
def rental_action(request, reference, action):
    if action not in ACTIONS:
        raise Http404
    order = _rental_or_404(reference)
    form_class, call, title = ACTIONS[action]
    form = form_class(request.POST if request.method == "POST" else None)
    status = 200
    if action == "prepare" and order.rental_state == RentalState.PREPARING:
        # Never silently nothing: say whether a worker holds the step, or when it is
        # taken up again.
        lease = selectors.step_in_flight(order)
        if lease is not None:
            note = _(
                "Rental %(reference)s is being prepared now: its %(step)s step is held by "
                "%(holder)s since %(since)s UTC, until %(until)s UTC. If that worker died, "
                "the step is taken up again by itself once the lease expires."
            ) % {
                "reference": order.reference,
                "step": lease.step,
                "holder": lease.holder,
                "since": lease.since.strftime("%Y-%m-%d %H:%M:%S"),
                "until": lease.until.strftime("%Y-%m-%d %H:%M:%S"),
            }
        else:
            note = _(
                "Rental %(reference)s is already preparing: its step waits in the queue or "
                "for a retry; if no worker takes it, it is taken up again by itself."
            ) % {"reference": order.reference}
        messages.warning(request, note)
        return render(
            request,
            "provisioning/action.html",
            {
                "order": order,
                "form": form,
                "title": title,
                "action": action,
                "destructive": action in DESTRUCTIVE_ACTIONS,
                "note": note,
            },
            status=409,
        )
    if request.method == "POST":
        if form.is_valid():
            try:
                call(order, form.cleaned_data, request.user)
            except ServiceError as error:
                add_service_error(form, error)
            else:
                messages.success(
                    request,
                    _("%(title)s: done for %(reference)s.")
                    % {"title": title, "reference": order.reference},
                )
                return redirect("desk:rental", reference=order.reference)
        status = 422
    return render(
        request,
        "provisioning/action.html",
        {
            "order": order,
            "form": form,
            "title": title,
            "action": action,
            "destructive": action in DESTRUCTIVE_ACTIONS,
        },
        status=status,
    )


@permission_required(OPERATE)
def rental_deliver(request, reference):
    order = _rental_or_404(reference)
    allocation = selectors.allocation_of(order)
    initial = selectors.delivery_defaults(order)
    form = DeliverForm(request.POST if request.method == "POST" else None, initial=initial)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = {k: v for k, v in form.cleaned_data.items() if k != "confirm"}
            try:
                services.rental_deliver(order=order, actor=request.user, **data)
            except ServiceError as error:
                add_service_error(form, error)
            else:
                messages.success(
                    request,
                    _("Access delivered for %(reference)s.") % {"reference": order.reference},
                )
                return redirect("desk:rental", reference=order.reference)
        status = 422
    return render(
        request,
        "provisioning/deliver.html",
        {
            "order": order,
            "form": form,
            "allocation": allocation,
            "keys": selectors.ssh_key_fingerprints(order),
            "authorized_keys": selectors.rental_spec(order=order).ssh_public_keys,
        },
        status=status,
    )


@never_cache  # it shows a customer's access secret: no cache may keep it
@permission_required(OPERATE, VIEW_ACCESS)
def rental_access(request, reference):
    """The delivered access with its secret, for an operator allowed to see it (audited)."""
    order = _rental_or_404(reference)
    try:
        access = services.access_reveal_to_staff(
            order=order, actor=request.user, ip=client_ip(request)
        )
    except NotFound:
        raise Http404 from None
    return render(request, "provisioning/access.html", {"order": order, "access": access})


# -- the fleet ----------------------------------------------------------------------------


@permission_required(OPERATE)
@signed_page
def fleet(request):
    form = NodeForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                offer = catalog_selectors.offer_get(slug=data.pop("offer"))
                node = services.node_create(offer=offer, actor=request.user, **data)
            except ServiceError as error:
                add_service_error(form, error)
            else:
                messages.success(
                    request,
                    ngettext(
                        "Node %(name)s added with %(n)d slot.",
                        "Node %(name)s added with %(n)d slots.",
                        node.gpu_count,
                    )
                    % {"name": node.name, "n": node.gpu_count},
                )
                return redirect("desk:fleet")
        status = 422
    # Each node's card is made here, in one pass, and the cards given as one text (what
    # the template's loop over the nodes wrote, "" for none): through the template engine
    # the cards were some 20 000 variable lookups a page at 100 nodes. Same HTML.
    card = _node_card_maker()
    cards = "".join(f"\n{card(node)}\n" for node in selectors.fleet_rows())
    return render(
        request,
        "provisioning/fleet.html",
        {
            "cards": mark_safe(cards),  # noqa: S308 - every value in it is escaped
            "form": form,
            "form_fields": fields_html(form),
        },
        status=status,
    )


def _node_card_maker():
    """A function giving a node's fleet card as HTML, with the page's links reversed once
    and its words translated once (get_FOO_display hashes every lazy label, and each lazy
    label looks its translation up again when written)."""
    state_url = link_maker("desk:node_state")
    ssh_url = link_maker("backoffice_nodes:detail")
    rental_url = link_maker("desk:rental")
    minute_text = minute_text_maker()
    states = {value: escape(label) for value, label in NodeState.choices}
    drivers = {value: escape(label) for value, label in DriverCode.choices}
    rental_states = {value: escape(label) for value, label in RentalState.choices}
    counted: dict[int, str] = {}  # the GPUs' message by count, translated once

    words = {
        key: escape(text)
        for key, text in (
            ("driver", gettext("driver")),
            ("health", gettext("health")),
            ("ok", gettext("ok")),
            ("change", gettext("Change state")),
            ("ssh", gettext("SSH: host key, settings, steps")),
            ("gpu", gettext("GPU")),
            ("runs", gettext("Runs")),
            ("until", gettext("Until")),
            ("free", gettext("free")),
            ("not_started", gettext("not started")),
        )
    }
    gpu_cell = f'<tr>\n      <td data-label="{words["gpu"]}">'
    runs_cell = f'</td>\n      \n      <td data-label="{words["runs"]}">'
    until_cell = f'</td>\n      <td data-label="{words["until"]}">'
    free = f'<span class="muted">{words["free"]}</span>'
    head = (
        '  <div class="table-scroll"><table class="stack">\n'
        f"    <thead><tr><th>{words['gpu']}</th><th>{words['runs']}</th>"
        f"<th>{words['until']}</th></tr></thead>\n"
    )

    def card(node: dict) -> str:
        rows = []
        for slot in node["slots"]:
            rental = slot["live"]
            if rental is None:
                run, end = free, ""
            else:
                reference, state = rental["reference"], rental["rental_state"]
                run = (
                    f'<a href="{escape(rental_url(reference))}"><code class="ref">'
                    f"{escape(reference)}</code></a> ({rental_states.get(state) or escape(state)})"
                )
                end = minute_text(rental["ends_at"]) if rental["ends_at"] else words["not_started"]
            uuid = f' <code class="small">{escape(slot["uuid"])}</code>' if slot["uuid"] else ""
            rows.append(
                f"{gpu_cell}{escape(slot['index'])}{uuid}{runs_cell}{run}{until_cell}{end}"
                "</td>\n          </tr>"
            )
        # The template's own message, without a {% blocktranslate count %} per node.
        count = node["gpu_count"]
        gpus = counted.get(count)
        if gpus is None:
            gpus = counted[count] = ngettext(
                "%(n)s GPU, %(busy)s busy", "%(n)s GPUs, %(busy)s busy", count
            )
        health = ""
        if node["health_checked_at"]:
            checked = node["health"] if isinstance(node["health"], dict) else {}
            verdict = (
                words["ok"]
                if checked.get("ok")
                else f'<span class="badge bad">{escape(checked.get("detail", ""))}</span>'
            )
            health = f"· {words['health']} {verdict} ({minute_text(node['health_checked_at'])})"
        reason = f" · <em>{escape(node['state_reason'])}</em>" if node["state_reason"] else ""
        driver = node["driver"]
        ssh = (
            f' · <a href="{escape(ssh_url(node["name"]))}">{words["ssh"]}</a>'
            if driver == "ssh"
            else ""
        )
        name = escape(node["name"])
        badge = "ok" if node["state"] == "available" else "warn"
        state = states.get(node["state"]) or escape(node["state"])
        return (
            f'<section class="card" id="node-{name}">\n'
            f"  <h2><code>{name}</code> · {escape(node['offer__gpu_model'])} · "
            f'<span class="badge {badge}">{state}</span></h2>\n'
            f"  <p>{escape(gpus % {'n': count, 'busy': node['slots_busy']})} · SSH "
            f"<code>{escape(node['host'])}:{escape(node['port'])}</code> · {words['driver']} "
            f"{drivers.get(driver) or escape(driver)}{reason}\n"
            f"  {health}\n"
            f'  · <a href="{escape(state_url(node["name"]))}">{words["change"]}</a>{ssh}</p>\n'
            f"{head}"
            f"    <tbody>{''.join(rows)}</tbody>\n"
            "  </table></div>\n"
            "</section>"
        )

    return card


@permission_required(OPERATE)
def node_state(request, name):
    try:
        node = selectors.node_get(name=name)
    except NotFound:
        raise Http404 from None
    form = NodeStateForm(
        request.POST if request.method == "POST" else None, initial={"state": node.state}
    )
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                services.node_state_set(
                    node=node,
                    state=form.cleaned_data["state"],
                    reason=form.cleaned_data["reason"],
                    actor=request.user,
                )
            except ServiceError as error:
                add_service_error(form, error)
            else:
                messages.success(
                    request,
                    _("Node %(name)s is now %(state)s.")
                    % {"name": node.name, "state": NodeState(form.cleaned_data["state"]).label},
                )
                return redirect("desk:fleet")
        status = 422
    return render(
        request, "provisioning/node_state.html", {"node": node, "form": form}, status=status
    )
