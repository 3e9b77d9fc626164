"""What the chain watchers record: transfers seen at our addresses, and each network's state.

Apart from the intents because these rows are written by the watchers from what a chain
reports (a transfer may match no intent at all); a transfer points at the intent it pays.
"""

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from kernodeck.payments.models.intents import PaymentIntent


class TransferKind(models.TextChoices):
    MATCHED = "matched", _("Matched")
    LATE = "late", _("Late")
    WRONG_ASSET = "wrong_asset", _("Wrong asset")
    SPOOFED = "spoofed", _("Spoofed token")
    FAILED = "failed", _("Failed transaction")
    DUST = "dust", _("Dust")
    UNALLOCATED = "unallocated", _("Unallocated")
    # Money on one of our addresses that no stored transfer explains (ETH a contract
    # forwarded by an internal call): found by a balance check, never counted by itself.
    UNEXPLAINED = "unexplained", _("Unexplained balance")


# The largest amount a Transfer holds (chains.base.AMOUNT_COLUMN_MAX, the adapters' bound).
TRANSFER_AMOUNT_MAX = 10**39 - 1

# Kinds an operator must look at (the review queue), besides intents in an exception.
REVIEW_KINDS = {TransferKind.WRONG_ASSET, TransferKind.UNALLOCATED, TransferKind.UNEXPLAINED}
# Review-queue transfers not yet decided (shared by the selector and the partial index).
REVIEW_TRANSFER_CASES = Q(kind__in=sorted(REVIEW_KINDS), review_resolved_at__isnull=True)


class Transfer(models.Model):
    """An on-chain credit seen at one of our addresses. Stored once, never forgotten."""

    network = models.CharField(max_length=16, verbose_name=_("network"))
    txid = models.CharField(max_length=100, verbose_name=_("transaction"))
    index = models.PositiveIntegerField(
        help_text=_("Output index or log index."), verbose_name=_("index")
    )
    address = models.CharField(max_length=100, db_index=True, verbose_name=_("address"))
    asset = models.CharField(max_length=8, verbose_name=_("asset"))
    token_contract = models.CharField(max_length=64, blank=True, verbose_name=_("token contract"))
    amount_base = models.DecimalField(
        max_digits=40, decimal_places=0, verbose_name=_("amount (base units)")
    )
    confirmations = models.PositiveIntegerField(default=0, verbose_name=_("confirmations"))
    block_height = models.PositiveBigIntegerField(
        null=True, blank=True, verbose_name=_("block height")
    )
    # The block's hash where the chain gives it (Ethereum): a reorg shows as another hash
    # at the same height, or as the transfer missing from a rescan of its block.
    block_hash = models.CharField(max_length=100, blank=True, verbose_name=_("block hash"))
    block_time = models.DateTimeField(null=True, blank=True, verbose_name=_("block time"))
    first_seen_at = models.DateTimeField(verbose_name=_("first seen at"))
    last_seen_at = models.DateTimeField(verbose_name=_("last seen at"))
    disappeared_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text=_("No longer reported (replaced or reorganised away)."),
        verbose_name=_("disappeared at"),
    )
    failed = models.BooleanField(default=False, verbose_name=_("failed"))
    final = models.BooleanField(default=False, verbose_name=_("final"))
    reference = models.CharField(max_length=64, blank=True, verbose_name=_("reference"))
    intent = models.ForeignKey(
        PaymentIntent,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="transfers",
        verbose_name=_("payment"),
    )
    kind = models.CharField(max_length=12, choices=TransferKind.choices, verbose_name=_("kind"))
    recorded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=_("The operator who recorded it by hand; empty when a watcher saw it."),
        verbose_name=_("recorded by"),
    )
    review_resolved_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("review decided at")
    )
    review_note = models.TextField(blank=True, verbose_name=_("review note"))

    class Meta:
        verbose_name = _("transfer")
        verbose_name_plural = _("transfers")
        ordering = ["first_seen_at", "id"]
        indexes = [
            # The review queue's second list: a handful of open cases among all transfers.
            models.Index(
                fields=["first_seen_at"],
                condition=REVIEW_TRANSFER_CASES,
                name="payments_transfer_review_idx",
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["network", "txid", "index"], name="payments_transfer_once"
            ),
            models.CheckConstraint(
                condition=Q(amount_base__gte=0), name="payments_transfer_amount"
            ),
            # What a page can show: SQLite keeps numbers past 2**63 as floats, and one that
            # rounds to 41 digits can no longer be read into the Decimal(40, 0) field.
            models.CheckConstraint(
                condition=Q(amount_base__lte=Decimal(TRANSFER_AMOUNT_MAX)),
                name="payments_transfer_amount_max",
            ),
        ]

    def __str__(self):
        return f"{self.network} {self.txid}:{self.index}"

    @property
    def seen_at(self):
        """When it happened for timeliness: the block time or first sighting, earlier wins."""
        if self.block_time is None:
            return self.first_seen_at
        return min(self.block_time, self.first_seen_at)


class ChainState(models.Model):
    """Health and scan cursor of one network's watcher."""

    network = models.CharField(max_length=16, primary_key=True, verbose_name=_("network"))
    tip = models.PositiveBigIntegerField(default=0, verbose_name=_("tip"))
    tip_changed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("tip changed at"))
    cursor = models.PositiveBigIntegerField(null=True, blank=True, verbose_name=_("cursor"))
    # Block scanning (Esplora): the last blocks scanned, newest last, as [height, hash]
    # pairs; a reorg shows as a hash that no longer matches, and the scan walks back.
    scanned_blocks = models.JSONField(default=list, blank=True, verbose_name=_("scanned blocks"))
    # When the intents kept only for late payments were last polled address by address.
    late_polled_at = models.DateTimeField(null=True, blank=True, verbose_name=_("late polled at"))
    # Address polling in turns (watching.rotation): the id of the last open intent polled
    # in turn; the next pass goes on with the ones after it.
    rotation_after = models.UUIDField(null=True, blank=True, verbose_name=_("rotation after"))
    last_success_at = models.DateTimeField(
        null=True, blank=True, verbose_name=_("last success at")
    )
    last_error_at = models.DateTimeField(null=True, blank=True, verbose_name=_("last error at"))
    last_error = models.TextField(blank=True, verbose_name=_("last error"))

    class Meta:
        verbose_name = _("chain state")
        verbose_name_plural = _("chain states")

    def __str__(self):
        return f"{self.network} at {self.tip}"


class MempoolMemory(models.Model):
    """The mempool transactions a network's block scan has read already, so the next pass
    (a `watch_chains --once` from cron as well as a worker's) reads only the new ones.

    Kept in the database, not the cache: a cache that is cleared, evicted or per process
    would make every pass read the whole mempool again. `seen` holds the first 8 bytes of
    each txid still in the mempool at the last pass, sorted and concatenated (8 bytes a
    transaction: 300 000 of them are 2.4 MB). Two txids sharing 8 bytes is about one chance
    in 10**14 a pass; the cost would be a mempool transaction not read until it is in a
    block, which the block scan reads in full. `source` is a digest of the API URL: another
    API starts with an empty memory. `loaded_at` is when the pass that read them began."""

    network = models.CharField(max_length=16, primary_key=True, verbose_name=_("network"))
    source = models.CharField(max_length=16, verbose_name=_("API"))
    seen = models.BinaryField(default=b"", verbose_name=_("transactions seen"))
    loaded_at = models.DateTimeField(verbose_name=_("loaded at"))

    class Meta:
        verbose_name = _("mempool memory")
        verbose_name_plural = _("mempool memories")

    def __str__(self):
        return f"{self.network}: {len(bytes(self.seen)) // 8} mempool transactions seen"


class PollCursor(models.Model):
    """Where address polling resumes for one watched key of a network (a Tron address, the
    Solana recipient, a Bitcoin or Litecoin address): what the chain API answered up to a
    point every later pass can start from, so a pass asks only for what can have changed.

    Kept in the database like MempoolMemory (cron's `watch_chains --once` and the workers
    share it). `position` is the adapter's own spelling: a block timestamp in milliseconds
    (Tron), a signature (Solana), a digest of the address's counters (Esplora). It only
    moves past what a pass fully processed and what can no longer change (solidified,
    finalized, deeper than the reorg depth), and only once the pass applied what it saw."""

    network = models.CharField(max_length=16, verbose_name=_("network"))
    key = models.CharField(max_length=100, verbose_name=_("watched key"))
    position = models.CharField(max_length=100, verbose_name=_("position"))
    updated_at = models.DateTimeField(verbose_name=_("updated at"))

    class Meta:
        verbose_name = _("poll cursor")
        verbose_name_plural = _("poll cursors")
        constraints = [
            models.UniqueConstraint(fields=["network", "key"], name="payments_pollcursor_unique")
        ]

    def __str__(self):
        return f"{self.network} {self.key} at {self.position}"
