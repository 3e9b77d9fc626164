"""The operators' API under /api/v1/ops: the desk's actions for scripts.

Tokens of staff accounts holding `provisioning.operate_rentals` only; any other token is
refused with 403 (a customer's token included). Access details need
`provisioning.view_access` as well, and every read of them is audited.
"""

from datetime import datetime
from typing import Annotated, Literal

from django.db import transaction
from django.utils.translation import gettext as _
from ninja import Router, Schema, Status
from pydantic import AfterValidator, Field, StrictInt, WithJsonSchema

from kernodeck.catalog import selectors as catalog_selectors
from kernodeck.core.errors import InvalidInput, NotAllowed
from kernodeck.core.requests import client_ip
from kernodeck.core.schemas import InputSchema
from kernodeck.orders.models import RentalState
from kernodeck.provisioning import node_health, selectors, services, tasks
from kernodeck.provisioning.drivers.ssh import fingerprint
from kernodeck.provisioning.models import DriverCode, NodeState

router = Router(tags=["operators"])


def _storable(value: str) -> str:
    """Refuse what PostgreSQL cannot store: a lone surrogate (JSON "\\ud800")."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid Unicode text (it holds a lone surrogate)") from None
    return value


def Text(max_length: int):
    """A string the database can store, at most `max_length` characters (422 otherwise,
    naming the field, as the customer API answers)."""
    return Annotated[str, Field(max_length=max_length), AfterValidator(_storable)]


OPERATE = "provisioning.operate_rentals"
VIEW_ACCESS = "provisioning.view_access"


def _operator(request, *extra: str):
    """The token's staff account, holding `operate_rentals` and every permission in `extra`."""
    user = request.auth
    if not (user.is_active and user.is_staff and user.has_perms([OPERATE, *extra])):
        raise NotAllowed(_("This needs an operator's token with the provisioning permission."))
    return user


class AllocationOut(Schema):
    node: str
    slots: list[int]


class RentalOut(Schema):
    reference: str
    rental_state: str
    rental_reason: str
    offer: str
    gpus: int
    units: int
    days: int
    preparation: str
    customer: str
    ssh_keys: list[str]
    waiting_seconds: int
    starts_at: datetime | None
    ends_at: datetime | None
    allocation: list[AllocationOut]


def rental_out(order, row: dict | None = None) -> dict:
    """A rental for operators; `row` is its desk row when listed (`selectors.desk_rows`)."""
    row = row or selectors.desk_rows([order])[0]
    return {
        "reference": order.reference,
        "rental_state": order.rental_state,
        "rental_reason": order.rental_reason,
        "offer": order.offer_slug,
        "gpus": order.gpus,
        "units": order.units,
        "days": order.days,
        "preparation": order.preparation,
        "customer": order.owner.email,
        "ssh_keys": row["keys"],
        "waiting_seconds": row["waiting"],
        "starts_at": order.starts_at,
        "ends_at": order.ends_at,
        "allocation": row["allocation"],
    }


@router.get("/rentals", response=list[RentalOut])
def rentals(
    request,
    state: Annotated[
        str, WithJsonSchema({"type": "string", "enum": ["", *RentalState.values]})
    ] = "",
):
    """Rentals to work on, oldest waiting first: queued, preparing and failed by default."""
    _operator(request)
    if state and state not in RentalState.values:
        raise InvalidInput(
            _("Unknown rental state; use one of: %(states)s.")
            % {"states": ", ".join(RentalState.values)},
            field="state",
        )
    rows = selectors.desk_rows(selectors.rentals_for_desk(state=state)[:500])
    return [rental_out(row["order"], row) for row in rows]


class ReasonIn(InputSchema):
    reason: Text(2000) = ""
    new_slots: bool = False


ACTIONS = {
    "prepare": lambda order, body, actor: services.rental_prepare(order=order, actor=actor),
    "fail": lambda order, body, actor: services.rental_fail(
        order=order, reason=body.reason, actor=actor
    ),
    "retry": lambda order, body, actor: services.rental_retry(
        order=order, actor=actor, new_slots=body.new_slots
    ),
    "refund": lambda order, body, actor: services.rental_refund(
        order=order, reason=body.reason, actor=actor
    ),
    "suspend": lambda order, body, actor: services.rental_suspend(
        order=order, reason=body.reason, actor=actor
    ),
    "resume": lambda order, body, actor: services.rental_resume(
        order=order, reason=body.reason, actor=actor
    ),
    "end": lambda order, body, actor: services.rental_end(
        order=order, reason=body.reason, actor=actor
    ),
}


class DeliverIn(InputSchema):
    host: Text(253)
    port: StrictInt  # a JSON number: "22" is refused, as the document says
    user: Text(64)
    url: Text(500) = ""
    token: Text(500) = ""


@router.post("/rentals/{reference}/deliver", response=RentalOut)
def rental_deliver(request, reference: str, payload: DeliverIn):
    """Deliver access (starts the clock). The token, if any, is stored encrypted."""
    actor = _operator(request)
    order = selectors.rental_get(reference=reference)
    order = services.rental_deliver(order=order, actor=actor, **payload.dict())
    return rental_out(order)


# Registered before the {action} route, which would otherwise take "access".
class AccessOut(Schema):
    host: str
    port: int
    user: str
    ssh_command: str
    url: str
    token: str


@router.get("/rentals/{reference}/access", response=AccessOut)
def rental_access(request, reference: str):
    """The delivered access of a rental (needs `operate_rentals` and `view_access`; every
    read is audited)."""
    actor = _operator(request, VIEW_ACCESS)
    order = selectors.rental_get(reference=reference)
    return services.access_reveal_to_staff(order=order, actor=actor, ip=client_ip(request))


@router.post("/rentals/{reference}/{action}", response=RentalOut)
def rental_action(
    request,
    reference: str,
    action: Literal["prepare", "fail", "retry", "refund", "suspend", "resume", "end"],
    payload: ReasonIn | None = None,
):
    """One move of the rental: prepare, fail, retry, refund, suspend, resume or end
    (`reason` required for fail, refund, suspend, resume and end)."""
    actor = _operator(request)
    order = selectors.rental_get(reference=reference)
    order = ACTIONS[action](order, payload or ReasonIn(), actor)
    return rental_out(order)


class NodeOut(Schema):
    name: str
    offer: str
    gpu_count: int
    host: str
    port: int
    driver: str
    state: str
    state_reason: str
    slots_busy: int
    health: dict
    health_checked_at: datetime | None
    # ssh nodes: the pinned host key's fingerprint and the key the node offers when none is
    # pinned or it changed (accept it with POST /ops/nodes/{name}/host-key).
    host_key_fingerprint: str
    host_key_offered: str
    retention_hours: int

    @staticmethod
    def resolve_offer(obj):
        return obj.offer.slug

    @staticmethod
    def resolve_host_key_fingerprint(obj):
        return fingerprint(obj.host_key) if obj.host_key else ""


class NodeIn(InputSchema):
    name: Text(64)
    offer: Text(64)
    gpu_count: int
    host: Text(253)
    port: int = 22
    driver: Literal["manual", "ssh"] = DriverCode.MANUAL
    admin_user: Text(32) = ""
    notes: Text(10_000) = ""


class NodeStateIn(InputSchema):
    state: Literal["available", "draining", "maintenance", "retired"]
    reason: Text(300)


@router.get("/nodes", response=list[NodeOut])
def nodes(request):
    _operator(request)
    return list(selectors.nodes_with_slots())


@router.post("/nodes", response={201: NodeOut})
def node_create(request, payload: NodeIn):
    """Add a node: its GPUs become slots. A manual node's count in the catalog at once; an
    ssh node's once its host key is accepted and its first inspection succeeded."""
    actor = _operator(request)
    offer = catalog_selectors.offer_get(slug=payload.offer)
    node = services.node_create(actor=actor, **{**payload.dict(), "offer": offer})
    return Status(201, selectors.nodes_with_slots().get(pk=node.pk))


@router.post("/nodes/{name}/state", response=NodeOut)
def node_state(request, name: str, payload: NodeStateIn):
    actor = _operator(request)
    node = selectors.node_get(name=name)
    services.node_state_set(
        node=node, state=NodeState(payload.state), reason=payload.reason, actor=actor
    )
    return selectors.nodes_with_slots().get(pk=node.pk)


class HostKeyIn(InputSchema):
    offered: Text(1000)


@router.post("/nodes/{name}/host-key", response=NodeOut)
def node_host_key_accept(request, name: str, payload: HostKeyIn):
    """Pin the host key the node offers (the one you compared on the machine)."""
    actor = _operator(request)
    node = selectors.node_get(name=name)
    node = node_health.node_host_key_accept(node=node, offered=payload.offered, actor=actor)
    if node.commissioned_at is None:
        # A new node enters service at its first successful inspection: now.
        transaction.on_commit(lambda: tasks.node_inspect_task(node.pk))
    return selectors.nodes_with_slots().get(pk=node.pk)


class NodeSshIn(InputSchema):
    retention_hours: int = 0
    agent_dir: Text(200) = "/var/lib/kernodeck"
    torch_index_url: Text(300) = ""
    inference_model: Text(200) = ""
    recipes: dict[Text(32), Text(20_000)] = {}


@router.post("/nodes/{name}/ssh", response=NodeOut)
def node_ssh_settings(request, name: str, payload: NodeSshIn):
    """How the ssh driver runs the node: retention, agent folder, wheels, model, recipes."""
    actor = _operator(request)
    node = selectors.node_get(name=name)
    node_health.node_ssh_settings_update(node=node, actor=actor, **payload.dict())
    return selectors.nodes_with_slots().get(pk=node.pk)
