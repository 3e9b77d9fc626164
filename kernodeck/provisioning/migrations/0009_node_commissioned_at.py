from django.db import migrations, models


def commission_existing(apps, schema_editor):
    """Nodes already in the fleet keep their place: an automated node with an accepted host
    key counts as commissioned since it was added (only new nodes wait for their first
    successful inspection)."""
    Node = apps.get_model("provisioning", "Node")
    for node in Node.objects.filter(driver="ssh").exclude(host_key=""):
        Node.objects.filter(pk=node.pk).update(commissioned_at=node.created_at)


class Migration(migrations.Migration):
    dependencies = [
        ("provisioning", "0008_delivery_remote_socket"),
    ]

    operations = [
        migrations.AddField(
            model_name="node",
            name="commissioned_at",
            field=models.DateTimeField(
                blank=True,
                help_text="First successful inspection with an accepted host key.",
                null=True,
                verbose_name="commissioned at",
            ),
        ),
        migrations.RunPython(commission_existing, migrations.RunPython.noop),
    ]
