"""The shape of the FAQ: sections of entries, an entry's answer and the support form it links to.

Apart from the answers so that both halves of the FAQ (and the page) share one definition.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class SupportLink:
    """The ticket form an answer that mentions support links to."""

    kind: str  # a support.Kind value
    label: str
    topic: str = ""


@dataclass(frozen=True)
class Entry:
    slug: str  # stable anchor, ascii, e.g. "which-gpu"
    question: str
    answer: str
    support: SupportLink | None = None


@dataclass(frozen=True)
class Section:
    slug: str
    title: str
    entries: tuple[Entry, ...]
