"""Operators' pages for automated (ssh) nodes: health, host keys, settings, step logs.

Staff with the provisioning permission only. Nothing here talks to a node: "inspect now"
queues the inspection task.
"""

from django.contrib import messages
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _

from kernodeck.accounts.permissions import permission_required
from kernodeck.backoffice.node_forms import HostKeyAcceptForm, NodeSshForm
from kernodeck.core.errors import ServiceError
from kernodeck.core.forms import add_service_error
from kernodeck.provisioning import node_health, tasks
from kernodeck.provisioning import selectors as provisioning_selectors
from kernodeck.provisioning.drivers.ssh import fingerprint
from kernodeck.provisioning.models import DriverCode, Node

operators_only = permission_required("provisioning.operate_rentals")


@operators_only
def node_list(request):
    nodes = Node.objects.filter(driver=DriverCode.SSH).select_related("offer").order_by("name")
    rows = [
        {
            "node": node,
            "pinned": fingerprint(node.host_key) if node.host_key else "",
            "offered": fingerprint(node.host_key_offered) if node.host_key_offered else "",
        }
        for node in nodes
    ]
    return render(request, "backoffice/ssh_nodes.html", {"rows": rows})


@operators_only
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
            "accept_form": accept_form,
            "steps": node_health.node_step_log(node),
            "gpu_use": provisioning_selectors.node_gpu_use(node=node),
        },
    )
