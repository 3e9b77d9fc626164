from decimal import Decimal

from django.db import migrations, models

LIMIT = 10**39 - 1


def cap_absurd_amounts(apps, schema_editor):
    """Rows stored before the limit existed (a chain API's nonsense on SQLite) would stop
    the constraint from being added, and no page can read them: they keep the limit as
    their amount, stop counting towards any payment and go to review with a note."""
    Transfer = apps.get_model("payments", "Transfer")
    Transfer.objects.filter(amount_base__gt=Decimal(LIMIT)).update(
        amount_base=Decimal(LIMIT),
        kind="unallocated",
        review_resolved_at=None,
        review_note=(
            "The chain API reported an impossible amount (more than 39 digits); "
            "stored as the largest amount kept. Check it on the chain."
        ),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("payments", "0003_intent_closed"),
    ]

    operations = [
        migrations.RunPython(cap_absurd_amounts, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="transfer",
            constraint=models.CheckConstraint(
                condition=models.Q(("amount_base__lte", Decimal(LIMIT))),
                name="payments_transfer_amount_max",
            ),
        ),
    ]
