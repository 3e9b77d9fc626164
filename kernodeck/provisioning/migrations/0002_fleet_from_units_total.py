"""Turn each offer's fixed fleet figure (`Offer.units_total`) into nodes and GPU slots.

Nothing is lost: an offer with N units of G GPUs gets N x G slots on nodes of up to 8 GPUs
(whole units per node), named `<slug>-01`, `<slug>-02`, ...; their host is a placeholder
the operator replaces with the real SSH endpoint. The figure itself is then dropped from
the catalog (the next catalog migration): availability is counted from the slots.
"""

from django.db import migrations
from django.utils import timezone

NODE_GPUS = 8


def nodes_from_units_total(apps, schema_editor):
    Offer = apps.get_model("catalog", "Offer")
    Node = apps.get_model("provisioning", "Node")
    GpuSlot = apps.get_model("provisioning", "GpuSlot")
    now = timezone.now()
    for offer in Offer.objects.all():
        per_node = max(1, NODE_GPUS // offer.gpus_per_unit) * offer.gpus_per_unit
        remaining = offer.units_total * offer.gpus_per_unit
        number = 0
        while remaining > 0:
            number += 1
            gpus = min(per_node, remaining)
            remaining -= gpus
            name = f"{offer.slug}-{number:02d}"[:64]
            node = Node.objects.create(
                name=name,
                offer=offer,
                gpu_count=gpus,
                host=f"{name}.invalid",
                port=22,
                driver="manual",
                state="available",
                notes=(
                    f"Created from the catalog's fleet figure ({offer.units_total} units). "
                    "Set the real SSH endpoint."
                ),
                created_at=now,
            )
            GpuSlot.objects.bulk_create(GpuSlot(node=node, index=i) for i in range(gpus))


def units_total_from_nodes(apps, schema_editor):
    Offer = apps.get_model("catalog", "Offer")
    Node = apps.get_model("provisioning", "Node")
    for offer in Offer.objects.all():
        gpus = sum(Node.objects.filter(offer=offer).values_list("gpu_count", flat=True))
        offer.units_total = gpus // offer.gpus_per_unit
        offer.save(update_fields=["units_total"])
    Node.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("provisioning", "0001_initial"),
        ("catalog", "0001_initial"),
    ]

    operations = [migrations.RunPython(nodes_from_units_total, units_total_from_nodes)]
