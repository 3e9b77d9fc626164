"""GPU use (issue 26, item 3): the agent's `status_all` reports each GPU's use, the reconcile
stores it bounded (one sample a minute, a retention), and the order file, the API and the
operator's node page show the last hour as small SVG plots with the current figures.

The end-to-end test runs the real agent on the SSH test hosts with a stand-in nvidia-smi;
the others feed the store directly and check the bounds, the check and the geometry."""

import json
from datetime import timedelta

import pytest

from kernodeck.accounts import services as account_services
from kernodeck.core import clock
from kernodeck.orders.models import RentalState
from kernodeck.provisioning import driving, selectors, services
from kernodeck.provisioning.drivers.answers import MalformedAnswer, check_answer
from kernodeck.provisioning.models import GpuSample, Node
from tests.factories import (
    make_offer,
    make_operator,
    make_order,
    make_settled_order,
    make_ssh_key,
    make_user,
)
from tests.provisioning import test_ssh_provisioning
from tests.provisioning.test_ssh_provisioning import customer_with_key, settle, ssh_node
from tests.sshhosts import ssh_lab  # noqa: F401 (the module-scoped fixture)

lab = test_ssh_provisioning.lab


def held_slots(order) -> list[int]:
    [allocation] = selectors.rental_spec(order=order).allocation
    return sorted(allocation.slots)


def use_of(index: int) -> dict:
    """Distinct figures per GPU, so a page showing another GPU's would be seen."""
    return {"util": 80 + index, "used": 40960 + index, "temp": 60 + index, "power": "512.3"}


def token_client(client, user):
    _token, raw = account_services.api_token_create(user=user, name="gpu use")
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.mark.django_db(transaction=True)
def test_the_reconcile_samples_the_gpus_and_the_order_api_and_node_page_plot_them(lab, client):
    host = lab.hosts[0]
    offer = make_offer(units_total=0, gpus_per_unit=2)
    node = ssh_node(offer, host)
    customer, _key_path = customer_with_key(lab, "laptop")
    order = settle(make_order(owner=customer, offer=offer, units=1, preparation="python"))
    assert order.rental_state == RentalState.ACTIVE
    held = held_slots(order)
    host.set_gpu_use({i: use_of(i) for i in range(host.gpu_count)})
    start = clock.now()
    clock.freeze(start)

    driving.node_reconcile(node_id=node.pk)
    driving.node_reconcile(node_id=node.pk)  # again at once: nothing more is stored
    assert GpuSample.objects.filter(node=node).count() == host.gpu_count

    # The rental's GPUs change; the others keep their figures.
    host.set_gpu_use(
        {
            i: {**use_of(i), **({"util": 40 + i, "power": "[N/A]"} if i in held else {})}
            for i in range(host.gpu_count)
        }
    )
    clock.freeze(start + timedelta(seconds=60))
    driving.node_reconcile(node_id=node.pk)
    assert GpuSample.objects.filter(node=node).count() == 2 * host.gpu_count

    client.force_login(customer)
    page = client.get(f"/orders/{order.reference}/").content.decode()
    assert page.count('class="gpu-card"') == 2
    assert page.count('<polyline class="gpu-line-util"') == 2
    for index in held:
        assert f"GPU {index}" in page and f"{40 + index} %" in page
        assert f"{60 + index} °C" in page
    assert "40.0 of 79.6 GiB" in page
    others = set(range(host.gpu_count)) - set(held)
    assert not any(f"{60 + i} °C" in page for i in others)

    client.logout()
    answer = client.get(f"/api/v1/orders/{order.reference}/gpus", **token_client(client, customer))
    assert answer.status_code == 200
    body = answer.json()
    assert [gpu["index"] for gpu in body["gpus"]] == held
    first = body["gpus"][0]
    index = held[0]
    assert [s["utilization_pct"] for s in first["samples"]] == [80 + index, 40 + index]
    assert [s["power_w"] for s in first["samples"]] == [512.3, None]
    assert first["current"]["memory_used_mib"] == 40960 + index
    assert first["current"]["memory_total_mib"] == 81559
    assert (first["machine"], first["stale"], body["window_seconds"]) == (1, False, 3600)
    stranger = token_client(client, make_user())
    assert client.get(f"/api/v1/orders/{order.reference}/gpus", **stranger).status_code == 404

    client.force_login(make_operator())
    node_page = client.get(f"/backoffice/nodes/{node.name}/").content.decode()
    assert node_page.count('class="gpu-card"') == host.gpu_count
    assert node_page.count('<polyline class="gpu-line-mem"') == host.gpu_count
    for index in range(host.gpu_count):
        assert f"{60 + index} °C" in node_page


def active_manual_rental():
    operator = make_operator()
    offer = make_offer(units_total=1, gpus_per_unit=2)
    order = make_settled_order(offer=offer, units=1)
    make_ssh_key(order.owner)
    services.rental_allocate(order=order)
    services.rental_prepare(order=order, actor=operator)
    services.rental_deliver(
        order=order, host="gpu-01.example.org", port=22, user="kd-rental", actor=operator
    )
    order.refresh_from_db()
    return order, Node.objects.get(offer=offer)


def sample(index, util, used=2048, total=81559):
    return {
        "index": index,
        "utilization_pct": util,
        "memory_used_mib": used,
        "memory_total_mib": total,
        "temperature_c": 50.0,
        "power_w": None,
    }


@pytest.mark.django_db
def test_samples_are_one_a_minute_of_the_nodes_slots_and_dropped_after_the_retention(settings):
    settings.KERNODECK_GPU_SAMPLE_SECONDS = 60
    settings.KERNODECK_GPU_SAMPLE_RETENTION_HOURS = 24
    _order, node = active_manual_rental()
    start = clock.now()
    clock.freeze(start)
    # GPU 9 is not a slot of this node: not stored.
    assert services.gpu_samples_record(node=node, samples=[sample(0, 10), sample(9, 10)]) == 1
    clock.freeze(start + timedelta(seconds=30))
    assert services.gpu_samples_record(node=node, samples=[sample(0, 20)]) == 0
    clock.freeze(start + timedelta(seconds=58))  # a tick a little early still counts
    assert services.gpu_samples_record(node=node, samples=[sample(0, 30), sample(1, 5)]) == 2
    assert GpuSample.objects.count() == 3

    clock.freeze(start + timedelta(hours=24, seconds=30))
    assert services.gpu_samples_record(node=node, samples=[]) == 0
    assert list(GpuSample.objects.values_list("utilization_pct", flat=True)) == [30.0, 5.0]
    clock.freeze(start + timedelta(hours=25))
    services.gpu_samples_record(node=node, samples=[sample(0, 1)])
    assert list(GpuSample.objects.values_list("utilization_pct", flat=True)) == [1.0]


@pytest.mark.django_db
def test_the_plot_spans_the_last_hour_with_gaps_where_samples_are_missing():
    now = clock.now().replace(microsecond=0)
    clock.freeze(now - timedelta(minutes=61))  # the rental started before the hour shown
    order, node = active_manual_rental()
    for minutes_ago, util in ((50, 100), (49, 50), (1, 0), (0, 25)):
        clock.freeze(now - timedelta(minutes=minutes_ago))
        services.gpu_samples_record(node=node, samples=[sample(0, util, used=40960)])
    clock.freeze(now)

    [gpu0, gpu1] = selectors.rental_gpu_use(order=order)
    # x: 240 wide over the hour; y: 60 high, 100 % at the top. 48 minutes missing: two runs.
    assert gpu0.lines[:2] == [
        ("gpu-line-util", "40.0,0.0 44.0,30.0"),
        ("gpu-line-util", "236.0,60.0 240.0,45.0"),
    ]
    assert gpu0.lines[2] == ("gpu-line-mem", "40.0,29.9 44.0,29.9")
    assert (gpu0.latest["utilization_pct"], gpu0.memory_pct, gpu0.stale) == (25.0, 50.2, False)
    assert (gpu1.latest, gpu1.lines, gpu1.stale) == (None, [], True)
    assert (gpu0.machine, gpu0.machines, gpu0.node) == (1, 1, node.name)

    clock.freeze(now + timedelta(minutes=5))
    assert selectors.rental_gpu_use(order=order)[0].stale


@pytest.mark.django_db
def test_the_order_file_shows_the_figures_in_spanish_and_nothing_before_access(client):
    order, node = active_manual_rental()
    services.gpu_samples_record(node=node, samples=[sample(0, 87, used=40960), sample(1, 3)])
    client.force_login(order.owner)

    page = client.get(f"/orders/{order.reference}/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "Uso de las GPU, última hora" in page
    assert "40,0 de 79,6 GiB" in page and "87 %" in page
    assert "(de 0 a 100 %)" in page and "hace una hora" in page
    assert node.host not in page  # the node's own address may be internal: never shown
    assert 'style="' not in page.split('id="gpu-use"')[1].split("</section>")[0]

    queued = make_settled_order(offer=make_offer(units_total=1), units=1)
    assert queued.rental_state == RentalState.QUEUED
    client.force_login(queued.owner)
    assert 'id="gpu-use"' not in client.get(f"/orders/{queued.reference}/").content.decode()
    assert selectors.rental_gpu_use(order=queued) == []


def status_all(gpus):
    return {"ok": True, "command": "status_all", "rentals": [], "gpus": gpus}


def test_the_answer_check_takes_gpu_use_in_range_and_refuses_the_rest():
    good = {"index": 1, "utilization_pct": 87.0, "memory_used_mib": 40960.0}
    checked = check_answer("gpu-01", "status_all", status_all([good, {"index": 0}]))
    assert [gpu["index"] for gpu in checked["gpus"]] == [0, 1]
    assert checked["gpus"][1]["utilization_pct"] == 87.0
    assert checked["gpus"][0]["power_w"] is None
    older = {"ok": True, "command": "status_all", "rentals": []}
    assert check_answer("gpu-01", "status_all", older)["gpus"] == []

    for bad in (
        [{"index": 0, "utilization_pct": 150}],
        [{"index": 0, "temperature_c": "64"}],
        [{"index": 0, "power_w": True}],
        [{"index": 0, "memory_used_mib": -1}],
        [{"index": 0}, {"index": 0}],
        [{"index": 64}],
        ["0, 87, 40960"],
        {"0": {}},
        [{"index": 0, "utilization_pct": float("nan")}],
    ):
        with pytest.raises(MalformedAnswer):
            check_answer("gpu-01", "status_all", json.loads(json.dumps(status_all(bad))))
