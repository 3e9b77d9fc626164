"""The customer FAQ, written from shared/seed/faq-es.txt (the business's promises).

A package because the answers are long: `entries` holds their shape (an entry, its section,
the support form it links to), and the sections are split where the customer's way through
them turns, before the order (`before_ordering`: choosing a GPU, units and durations, the
account) and after it (`after_ordering`: paying, the balance, the rental, the work and
support). The page shows `SECTIONS` in this order.
"""

from kernodeck.guides.faq import after_ordering, before_ordering
from kernodeck.guides.faq.entries import Entry, Section, SupportLink

__all__ = ["SECTIONS", "Entry", "Section", "SupportLink"]

SECTIONS: tuple[Section, ...] = before_ordering.SECTIONS + after_ordering.SECTIONS
