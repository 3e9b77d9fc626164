"""Operators' pages for automated (ssh) nodes: health, host keys, settings, step logs.

Staff with the provisioning permission only. Nothing here talks to a node: "inspect now"
queues the inspection task.
"""

from django.contrib import messages
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from kernodeck.accounts.permissions import permission_required
from kernodeck.backoffice.node_forms import HostKeyAcceptForm, NodeSshForm
from kernodeck.core.errors import ServiceError
from kernodeck.core.forms import add_service_error, fields_html
from kernodeck.core.links import escape_text as escape
from kernodeck.core.links import link_maker
from kernodeck.core.listing import minute_text
from kernodeck.core.signedpages import signed_page
from kernodeck.provisioning import node_health, tasks
from kernodeck.provisioning import selectors as provisioning_selectors
from kernodeck.provisioning.drivers.ssh import fingerprint
from kernodeck.provisioning.models import DriverCode, Node, NodeState

operators_only = permission_required("provisioning.operate_rentals")


# The columns the SSH nodes list shows, read as dicts: no Node instances for 100 rows.
_LIST_COLUMNS = (
    "name",
    "offer__gpu_model",
    "admin_user",
    "host",
    "port",
    "state",
    "state_reason",
    "health",
    "health_checked_at",
    "gpu_count",
    "host_key",
    "host_key_offered",
)


@operators_only
@signed_page
def node_list(request):
    nodes = Node.objects.filter(driver=DriverCode.SSH).order_by("name").values(*_LIST_COLUMNS)
    row = _node_row_maker()
    rows = [row(node) for node in nodes]
    return render(request, "backoffice/ssh_nodes.html", {"rows": rows})


def _node_row_maker():
    """A function giving one SSH node's row of the list as HTML: the column labels and
    badges translated once for the page, the node's link reversed once, every value
    escaped, the minute written with one formatter. Same HTML as the template's loop made
    (some 60 variable lookups and filters a row through the template engine)."""
    detail_url = link_maker("backoffice_nodes:detail")
    states = {value: escape(label) for value, label in NodeState.choices}
    words = {
        key: escape(text)
        for key, text in (
            ("node", gettext("Node")),
            ("offer", gettext("Offer")),
            ("state", gettext("State")),
            ("health", gettext("Health")),
            ("gpus", gettext("GPUs seen / slots")),
            ("checked", gettext("Checked")),
            ("host_key", gettext("Host key")),
        )
    }
    not_yet = f'<span class="badge muted">{escape(gettext("not yet"))}</span>'
    healthy = f'<span class="badge ok">{escape(gettext("healthy"))}</span>'
    problem = f'<span class="badge bad">{escape(gettext("problem"))}</span>'
    to_accept = f'<span class="badge warn">{escape(gettext("to accept"))}</span>'
    none_seen = f'<span class="muted">{escape(gettext("none seen"))}</span>'
    tones = {NodeState.AVAILABLE: "ok", NodeState.MAINTENANCE: "bad"}

    def row(node: dict) -> dict:
        health = node["health"] if isinstance(node["health"], dict) else {}
        checked_at = node["health_checked_at"]
        state, reason = node["state"], node["state_reason"]
        offered = fingerprint(node["host_key_offered"]) if node["host_key_offered"] else ""
        pinned = fingerprint(node["host_key"]) if node["host_key"] else ""
        if reason:
            reason = f'<br><span class="small muted">{escape(Truncator(reason).chars(120))}</span>'
        verdict = not_yet if not checked_at else healthy if health.get("ok") else problem
        if offered:
            key = f'{to_accept} <code class="small">{escape(offered)}</code>'
        elif pinned:
            key = f'<code class="small">{escape(pinned)}</code>'
        else:
            key = none_seen
        name = node["name"]
        html = (
            "<tr>\n"
            f'      <td data-label="{words["node"]}"><a href="{escape(detail_url(name))}">'
            f"{escape(name)}</a></td>\n"
            f'      <td data-label="{words["offer"]}">{escape(node["offer__gpu_model"])}</td>\n'
            f'      <td data-label="SSH"><code>{escape(node["admin_user"] or "root")}@'
            f"{escape(node['host'])}:{escape(node['port'])}</code></td>\n"
            f'      <td data-label="{words["state"]}"><span class="badge '
            f'{tones.get(state, "warn")}">{states.get(state) or escape(state)}</span>'
            f"{reason or ''}</td>\n"
            f'      <td data-label="{words["health"]}">{verdict}</td>\n'
            f'      <td data-label="{words["gpus"]}">{escape(health.get("gpus_seen") or "—")} / '
            f"{escape(node['gpu_count'])}</td>\n"
            f'      <td data-label="{words["checked"]}">'
            f"{minute_text(checked_at) if checked_at else '—'}</td>\n"
            f'      <td data-label="{words["host_key"]}">{key}</td>\n'
            "    </tr>"
        )
        return {"name": name, "html": mark_safe(html)}  # noqa: S308 - every value is escaped

    return row


@operators_only
@signed_page
def node_detail(request, name):
    node = get_object_or_404(Node.objects.select_related("offer"), name=name, driver="ssh")
    action = request.POST.get("action", "")
    initial = {
        "retention_hours": node.retention_hours,
        "agent_dir": node.agent_dir,
        "torch_index_url": node.torch_index_url,
        "inference_model": node.inference_model,
        **{f"recipe_{code}": script for code, script in (node.recipes or {}).items()},
    }
    settings_form = NodeSshForm(request.POST if action == "settings" else None, initial=initial)
    accept_form = HostKeyAcceptForm(request.POST if action == "accept" else None)
    if request.method == "POST":
        try:
            if action == "settings" and settings_form.is_valid():
                data = settings_form.cleaned_data
                node_health.node_ssh_settings_update(
                    node=node,
                    retention_hours=data["retention_hours"],
                    agent_dir=data["agent_dir"],
                    torch_index_url=data["torch_index_url"],
                    inference_model=data["inference_model"],
                    recipes=settings_form.recipes(),
                    actor=request.user,
                )
                messages.success(request, _("Settings saved."))
                return redirect("backoffice_nodes:detail", name=node.name)
            if action == "accept" and accept_form.is_valid():
                node = node_health.node_host_key_accept(
                    node=node, offered=accept_form.cleaned_data["offered"], actor=request.user
                )
                if node.commissioned_at is None:
                    # A new node enters service at its first successful inspection: now.
                    transaction.on_commit(lambda: tasks.node_inspect_task(node.pk))
                    messages.success(
                        request,
                        _(
                            "Host key accepted. The node is being inspected; it enters "
                            "service by itself once the inspection succeeds."
                        ),
                    )
                else:
                    messages.success(
                        request, _("Host key accepted. Put the node in service when ready.")
                    )
                return redirect("backoffice_nodes:detail", name=node.name)
            if action == "inspect":
                transaction.on_commit(lambda: tasks.node_inspect_task(node.pk))
                messages.success(request, _("Inspection queued."))
                return redirect("backoffice_nodes:detail", name=node.name)
        except ServiceError as exc:
            add_service_error(settings_form if action == "settings" else accept_form, exc)
    return render(
        request,
        "backoffice/ssh_node.html",
        {
            "node": node,
            "pinned": fingerprint(node.host_key) if node.host_key else "",
            "offered": fingerprint(node.host_key_offered) if node.host_key_offered else "",
            "settings_form": settings_form,
            "settings_fields": fields_html(settings_form),
            "accept_form": accept_form,
            "steps": node_health.node_step_log(node),
            "gpu_use": provisioning_selectors.node_gpu_use(node=node),
        },
    )
