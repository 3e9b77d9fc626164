"""Store existing addresses with international domains in their IDNA (punycode) form.

From now on `normalize_email` maps "café.example" to "xn--caf-dma.example", so accounts
registered before keep signing in. Two accounts that now collide are left as they are
(listed in the log) for an operator to decide.
"""

import logging

from django.db import migrations

logger = logging.getLogger(__name__)


def forwards(apps, schema_editor):
    from kernodeck.accounts.models import normalize_email

    User = apps.get_model("accounts", "User")
    for user in User.objects.exclude(email__regex=r"^[ -~]*$").only("pk", "email"):
        normalised = normalize_email(user.email)
        if normalised == user.email:
            continue
        if User.objects.filter(email=normalised).exists():
            logger.warning("account %s: %s already exists, left unchanged", user.pk, normalised)
            continue
        User.objects.filter(pk=user.pk).update(email=normalised)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_user_preferred_language")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
