"""Settlement: what follows, for each purpose, when money arrives or leaves.

Payments decide what the chain and the operators say about an intent (seen, confirmed,
under/over/late, reversed); the domains below keep their own state (orders, the ledger,
support's extensions, provisioning). This package joins them, one entry point per business
event: an order settles (from a confirmed payment, an operator's decision or the balance)
and its rental is queued; a top-up is opened and credited; an extension is paid and
applied; an order is cancelled and its instructions closed. Each entry point locks, checks,
writes and audits in one transaction, calling down only: nothing below imports this package.
The watcher reaches it through the allocator named in settings (KERNODECK_PAYMENT_ALLOCATOR).
"""
