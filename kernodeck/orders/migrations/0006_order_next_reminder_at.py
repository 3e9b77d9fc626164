from datetime import timedelta

from django.db import migrations, models
from django.db.models import Case, F, Q, When

# As notifications.reminders had them when this ran (a migration does not follow code).
THRESHOLDS_HOURS = (72, 24, 2)


def plan_reminders(apps, schema_editor):
    """Every running rental owes reminders from its first planned moment: the first tick
    after this reads those whose moment has passed, sends the most urgent one not stored
    yet (the outbox's dedupe key skips one already sent) and moves each marker on."""
    Order = apps.get_model("orders", "Order")
    first = Case(
        *[
            When(
                Q(ends_at__gt=F("starts_at") + timedelta(hours=h)),
                then=F("ends_at") - timedelta(hours=h),
            )
            for h in sorted(THRESHOLDS_HOURS, reverse=True)
        ],
        default=None,
        output_field=models.DateTimeField(),
    )
    Order.objects.filter(
        rental_state__in=["active", "suspended"],
        starts_at__isnull=False,
        ends_at__isnull=False,
    ).update(next_reminder_at=first)


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0005_order_running_ends_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="order",
            name="next_reminder_at",
            field=models.DateTimeField(
                blank=True, editable=False, null=True, verbose_name="next reminder at"
            ),
        ),
        migrations.AddIndex(
            model_name="order",
            index=models.Index(
                condition=models.Q(("rental_state", "active"), ("next_reminder_at__isnull", False)),
                fields=["next_reminder_at"],
                name="orders_order_reminder_owed_idx",
            ),
        ),
        migrations.RunPython(plan_reminders, migrations.RunPython.noop, elidable=True),
    ]
