"""Store existing addresses with their local part folded (NFKC and case folding).

From now on `normalize_email` maps "ſam@example.org" (long s) and "ＳＡＭ@example.org"
(full-width) to "sam@example.org". Addresses that fold to an address no other account has
are updated, so those accounts keep signing in. Accounts that now collide are NOT merged:
each is left exactly as it is, and the collision is reported — a warning in the migration's
log and an `accounts.email_lookalike` audit event per account (back-office audit trail) —
for an operator to decide (contact the customers, change one address).
"""

import logging
import unicodedata
from collections import defaultdict

from django.db import migrations
from django.utils import timezone

logger = logging.getLogger(__name__)


def _folded(email: str) -> str:
    # The rule of accounts.models.normalize_email at the time of this migration (the
    # domain is already stored normalised by 0003).
    local, at, domain = email.rpartition("@")
    if not at:
        return email
    local = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", local).casefold())
    return f"{local}@{domain}"


def forwards(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    AuditEvent = apps.get_model("core", "AuditEvent")
    stored = dict(User.objects.values_list("pk", "email"))
    by_folded = defaultdict(list)
    for pk, email in stored.items():
        by_folded[_folded(email)].append(pk)
    now = timezone.now()
    for folded, pks in by_folded.items():
        changed = [pk for pk in pks if stored[pk] != folded]
        if not changed:
            continue
        if len(pks) == 1:
            User.objects.filter(pk=pks[0]).update(email=folded)
            continue
        addresses = sorted(stored[pk] for pk in pks)
        logger.warning(
            "look-alike addresses fold to %s: %s (accounts %s); left unchanged, not merged",
            folded,
            ", ".join(addresses),
            ", ".join(str(pk) for pk in sorted(pks)),
        )
        for pk in pks:
            AuditEvent.objects.create(
                created_at=now,
                action="accounts.email_lookalike",
                target_type="accounts.user",
                target_id=str(pk),
                data={"folded": folded, "addresses": addresses, "accounts": sorted(pks)},
            )


class Migration(migrations.Migration):
    dependencies = [("accounts", "0004_verbose_names"), ("core", "0002_verbose_names")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
