"""The SSH nodes list's rows, made in the view in one pass (issue 27): the same HTML as
the template's loop made (kept below as the reference), in English and in Spanish, with
each node's link and every value escaped; the node page's step log reads the steps of the
rentals that ran on it. Its settings fields: tests/core/test_fields_html.py."""

from datetime import timedelta

import pytest
from django.db import connection
from django.template import engines
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import translation

from kernodeck.core import clock
from kernodeck.core.services import audit_record
from kernodeck.provisioning.drivers.ssh import fingerprint
from kernodeck.provisioning.models import Node
from kernodeck.provisioning.node_health import STEP_TARGET, node_step_log
from tests.budgets.operations_data import build
from tests.factories import make_offer, make_operator

pytestmark = pytest.mark.django_db

NASTY = "<script>alert('x')</script> & \"quoted\""
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk9cTq8lJ0bq6n0d0cB3m6m0p6mNlq5Hk3Yk0cJ3Qz1"
OTHER = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOVn5sTq0wR1xI9uPz2Q7j7kq2bS0vH3n9fJ4k8lY2aZ"

# The SSH nodes template's row loop before the rows were made in the view.
REFERENCE = engines["django"].from_string(
    '{% load i18n %}{% translate "Node" as label_node %}{% translate "Offer" as label_offer %}'
    '{% translate "State" as label_state %}{% translate "Health" as label_health %}'
    '{% translate "GPUs seen / slots" as label_gpus_seen_slots %}'
    '{% translate "Checked" as label_checked %}{% translate "Host key" as label_host_key %}'
    """{% for row in rows %}<tr>
      <td data-label="{{ label_node }}"><a href="{% url 'backoffice_nodes:detail' row.node.name %}">{{ row.node.name }}</a></td>
      <td data-label="{{ label_offer }}">{{ row.node.offer.gpu_model }}</td>
      <td data-label="SSH"><code>{{ row.node.admin_user|default:"root" }}@{{ row.node.host }}:{{ row.node.port }}</code></td>
      <td data-label="{{ label_state }}"><span class="badge {% if row.node.state == 'available' %}ok{% elif row.node.state == 'maintenance' %}bad{% else %}warn{% endif %}">{{ row.node.get_state_display }}</span>{% if row.node.state_reason %}<br><span class="small muted">{{ row.node.state_reason|truncatechars:120 }}</span>{% endif %}</td>
      <td data-label="{{ label_health }}">{% if not row.node.health_checked_at %}<span class="badge muted">{% translate "not yet" %}</span>{% elif row.node.health.ok %}<span class="badge ok">{% translate "healthy" %}</span>{% else %}<span class="badge bad">{% translate "problem" %}</span>{% endif %}</td>
      <td data-label="{{ label_gpus_seen_slots }}">{{ row.node.health.gpus_seen|default:"—" }} / {{ row.node.gpu_count }}</td>
      <td data-label="{{ label_checked }}">{{ row.node.health_checked_at|date:"Y-m-d H:i"|default:"—" }}</td>
      <td data-label="{{ label_host_key }}">{% if row.offered %}<span class="badge warn">{% translate "to accept" %}</span> <code class="small">{{ row.offered }}</code>{% elif row.pinned %}<code class="small">{{ row.pinned }}</code>{% else %}<span class="muted">{% translate "none seen" %}</span>{% endif %}</td>
    </tr>{% endfor %}"""  # noqa: E501 - the template's lines as they were
)


def _reference_rows(language: str) -> str:
    nodes = Node.objects.filter(driver="ssh").select_related("offer").order_by("name")
    rows = [
        {
            "node": node,
            "pinned": fingerprint(node.host_key) if node.host_key else "",
            "offered": fingerprint(node.host_key_offered) if node.host_key_offered else "",
        }
        for node in nodes
    ]
    with translation.override(language):
        return REFERENCE.render({"rows": rows})


def _tbody(html: str) -> str:
    return html.rsplit("<tbody>", 1)[1].split("</tbody>", 1)[0]


@pytest.fixture
def nodes():
    """Nodes in every state the list words differently, with values to escape."""
    data = build(6)
    names = list(Node.objects.order_by("name").values_list("name", flat=True))
    now = clock.now()
    Node.objects.filter(name__in=names).update(driver="ssh")
    Node.objects.filter(name=names[0]).update(
        state="maintenance",
        state_reason=NASTY + " " + "long " * 40,
        host_key_offered=KEY,
        host_key=OTHER,
        health={"ok": False, "detail": NASTY, "gpus_seen": 1},
        health_checked_at=now - timedelta(minutes=3),
        admin_user="ops<&>",
        host="10.0.0.9",
    )
    Node.objects.filter(name=names[1]).update(
        state="draining", host_key=KEY, health={"ok": True, "gpus_seen": 2}, health_checked_at=now
    )
    Node.objects.filter(name=names[2]).update(state="retired", health=["not", "a", "dict"])
    Node.objects.filter(name=names[3]).update(offer_id=make_offer(gpu_model=NASTY).pk)
    return data, names


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_list_rows_are_the_templates_rows(client, nodes, language):
    data, _names = nodes
    client.force_login(data.operator)

    page = client.get("/backoffice/nodes/", HTTP_ACCEPT_LANGUAGE=language)

    assert page.status_code == 200
    assert _tbody(page.content.decode()) == _reference_rows(language)


@pytest.mark.parametrize(
    ("language", "words"),
    [
        ("en", ['data-label="GPUs seen / slots"', ">to accept<", ">healthy<", ">Maintenance<"]),
        (
            "es",
            [
                'data-label="Clave del host"',
                ">por aceptar<",
                ">en funcionamiento<",
                ">Mantenimiento<",
            ],
        ),
    ],
)
def test_the_list_reads_in_the_visitors_language_with_links_and_escaped_values(
    client, nodes, language, words
):
    data, names = nodes
    client.force_login(data.operator)

    html = _tbody(client.get("/backoffice/nodes/", HTTP_ACCEPT_LANGUAGE=language).content.decode())

    assert html.count("<tr>") == len(names)
    for name in names:
        assert f'<a href="{reverse("backoffice_nodes:detail", args=[name])}">{name}</a>' in html
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quoted&quot;" in html
    assert "ops&lt;&amp;&gt;@10.0.0.9" in html
    assert fingerprint(KEY) in html
    for word in words:
        assert word in html, word


def test_the_node_page_lists_the_steps_of_rentals_that_ran_on_it(client):
    data = build(4)
    node = data.node  # every rental of the data set ran on it (released since)
    first, second = data.node.slots.get(index=1).allocations.order_by("order_id")[:2]
    for allocation, step in ((first, "prepare <b>"), (second, "start")):
        audit_record(
            action="provisioning.rental_step",
            target_type=STEP_TARGET,
            target_id=str(allocation.order_id),
            data={"step": step, "detail": "ok"},
        )
    audit_record(action="provisioning.rental_step", target_type=STEP_TARGET, target_id="999999")
    steps = node_step_log(node)
    assert {(s["reference"], s["step"]) for s in steps} == {
        (first.order.reference, "prepare <b>"),
        (second.order.reference, "start"),
    }

    client.force_login(make_operator())
    with CaptureQueriesContext(connection) as queries:
        html = client.get(f"/backoffice/nodes/{node.name}/").content.decode()
    # the operator's permissions (1: accounts/backends.py), session, account, node, events,
    # the steps' references, the GPUs' slots and samples: whatever the node's history
    assert len(queries.captured_queries) == 8
    assert f'<code class="ref">{first.order.reference}</code>' in html
    assert "prepare &lt;b&gt;" in html
