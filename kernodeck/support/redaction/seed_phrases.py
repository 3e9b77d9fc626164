"""Wallet recovery phrases: BIP39 words found in any list, any case, any separators.

A wallet's recovery phrase is 12, 15, 18, 21 or 24 words of one BIP39 list, in any case,
with any separators, numbered or bulleted, one per line, or cut to the four letters that
identify each word. Its last word carries a checksum: a run whose checksum holds is
certainly a phrase; a run where nearly all words are on one list is removed too (a typo
or a changed word breaks the checksum but not the danger), and the notice says so.
Words of the customer's prose that happen to be on a list ("my seed phrase:", "mi
frase:") stay when a separator the phrase does not use sets them apart; a phrase numbered
in two columns (1, 7, 2, 8…) is checked in the order of its numbers.

Apart from the text rules because this is a search over word lists with its own checksum
arithmetic, not a pattern; `text.redact` runs it last.
"""

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from kernodeck.support.redaction.findings import REMOVED

SEED_LENGTHS = (12, 15, 18, 21, 24)
_SEED_MIN = SEED_LENGTHS[0]
# Lists written in Latin letters: each word is identified by its first four letters.
_ABBREVIATED = {"english", "spanish", "french", "italian", "portuguese", "czech"}
_TOKEN = re.compile(r"[^\W\d_]+")
# What may stand between two words of one phrase: spaces and line breaks, commas, bars,
# bullets, dashes, and the numbers of a numbered list ("1.", "2)", "(3)", "04").
_GAP = re.compile(r"[\s\d.,;:|/\\()\[\]#*•·‣◦▪\-" "\u2013\u2014" r"\"'=>]{1,16}")
_LONG_NUMBER = re.compile(r"\d{3}")
_NUMBERING_BEFORE = re.compile(r"(?:[-*•·‣◦▪]\s?|\(?\d{1,2}[.):\]]?\s?)\Z")
_NUMBER_BEFORE = re.compile(r"(?<!\d)(\d{1,2})[.):\]\-]?[ \t]*\Z")


def _number_before(text: str, start: int) -> int | None:
    """The number of a numbered list written just before a word (`7. `, `7) `, `(7)`)."""
    found = _NUMBER_BEFORE.search(text, max(0, start - 6), start)
    return int(found.group(1)) if found else None


def _fold(word: str) -> str:
    """Lower case without accents: `Ábaco`, `ABACO` and `ábaco` are one word."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


@dataclass(frozen=True)
class Wordlist:
    """One official BIP39 list: each word's index by its folded spelling (and by its
    four-letter abbreviation where the list guarantees those are unique)."""

    language: str
    words: tuple[str, ...]
    index: dict
    prefixes: dict

    def lookup(self, folded: str) -> int | None:
        found = self.index.get(folded)
        if found is None and self.prefixes and len(folded) >= 4:
            found = self.prefixes.get(folded[:4])
            if found is not None and not self.words[found].startswith(folded):
                found = None
        return found


@lru_cache(maxsize=1)
def bip39_lists() -> tuple[Wordlist, ...]:
    """Every official BIP39 list that bip_utils ships (a dependency already)."""
    from bip_utils import Bip39Languages
    from bip_utils.bip.bip39.bip39_mnemonic_utils import Bip39WordsListGetter

    lists = []
    for language in Bip39Languages:
        source = Bip39WordsListGetter().GetByLanguage(language)
        words = tuple(_fold(source.GetWordAtIdx(i)) for i in range(source.Length()))
        name = language.name.lower()
        prefixes = {}
        if name in _ABBREVIATED:
            prefixes = {w[:4]: i for i, w in enumerate(words) if len(w) >= 4}
            if len(prefixes) != sum(1 for w in words if len(w) >= 4):
                prefixes = {}  # not unique in this list: whole words only
        lists.append(
            Wordlist(
                language=name,
                words=words,
                index={w: i for i, w in enumerate(words)},
                prefixes=prefixes,
            )
        )
    return tuple(lists)


@lru_cache(maxsize=1)
def _any_list() -> tuple[frozenset, frozenset]:
    """Every word and every four-letter abbreviation of every list."""
    lists = bip39_lists()
    return (
        frozenset(w for wl in lists for w in wl.words),
        frozenset(p for wl in lists for p in wl.prefixes),
    )


def bip39_checksum_valid(indexes: list[int]) -> bool:
    """Whether word indexes (12 to 24 of them) carry a valid BIP39 checksum."""
    count = len(indexes)
    if count not in SEED_LENGTHS:
        return False
    bits = 0
    for index in indexes:
        bits = (bits << 11) | index
    checksum_bits = count // 3
    entropy_bits = count * 11 - checksum_bits
    entropy = (bits >> checksum_bits).to_bytes(entropy_bits // 8, "big")
    expected = hashlib.sha256(entropy).digest()[0] >> (8 - checksum_bits)
    return expected == bits & ((1 << checksum_bits) - 1)


def _chains(text: str):
    """Runs of words separated only by what may separate a phrase's words."""
    chain: list[re.Match] = []
    for match in _TOKEN.finditer(text):
        if chain:
            gap = text[chain[-1].end() : match.start()]
            if not _GAP.fullmatch(gap) or _LONG_NUMBER.search(gap) or gap.count("\n") > 3:
                if len(chain) >= _SEED_MIN:
                    yield chain
                chain = []
        chain.append(match)
    if len(chain) >= _SEED_MIN:
        yield chain


def _groups(indexes: list[int | None], first: int, last: int):
    """(first, last + 1) of each stretch of at least 12 words between `first` and `last`
    where at most one word in twelve is not on the list."""
    runs = []
    start = None
    for i in range(first, last + 1):
        value = indexes[i] if i < last else None
        if value is not None and start is None:
            start = i
        elif value is None and start is not None:
            runs.append((start, i))
            start = None
    groups = []
    for run in runs:
        if groups:
            begin, end, misses = groups[-1]
            if run[0] == end + 1 and misses + 1 <= (run[1] - begin) // _SEED_MIN:
                groups[-1] = (begin, run[1], misses + 1)
                continue
        groups.append((run[0], run[1], 0))
    return [(begin, end) for begin, end, _misses in groups if end - begin >= _SEED_MIN]


def _phrase_groups(indexes: list[int | None], shapes: list[str], numbers: list[int | None]):
    """(first, last + 1, checksum valid) for each phrase: a phrase whose checksum holds,
    set apart from the list words around it (see `_next_phrase`), goes alone; the rest of a
    stretch goes whole when it still is a stretch. `shapes[i]` is the separator between
    words i and i + 1 (see `_shape`), `numbers[i]` the number written before word i."""
    for first, last in _groups(indexes, 0, len(indexes)):
        pos = first
        while last - pos >= _SEED_MIN:
            found = _next_phrase(indexes, shapes, numbers, pos, first, last)
            if found is None:
                break
            yield from _unchecked(indexes, shapes, pos, found[0])
            yield found[0], found[1], True
            pos = found[1]
        yield from _unchecked(indexes, shapes, pos, last)


_EDGE = 5  # list words of prose at either end of a stretch: "my wallet seed phrase:"


def _unchecked(indexes, shapes, first: int, last: int):
    """The stretches between `first` and `last` (no phrase whose checksum holds found in
    them), each without the few words at its ends that a separator found nowhere else in
    it sets apart (the colon of "mi frase:\n…"), as long as twelve words remain."""
    for begin, end in _groups(indexes, first, last):
        counts = Counter(shapes[begin : end - 1])
        for cut in range(begin + 1, min(begin + _EDGE, end - _SEED_MIN) + 1):
            if counts[shapes[cut - 1]] == 1:
                begin = cut
                break
        for cut in range(end - 1, max(end - _EDGE, begin + _SEED_MIN) - 1, -1):
            if counts[shapes[cut - 1]] == 1:
                end = cut
                break
        yield begin, end, _checksum_somewhere(indexes[begin:end])


def _shape(gap: str) -> str:
    """A separator without its numbers and with spaces collapsed: `\n2. ` and `\n10. `
    are one shape."""
    return re.sub(r"[ \t]+", " ", re.sub(r"\d+", "", gap))


def _in_order(indexes: list[int], numbers: list[int | None]) -> list[int]:
    """The words in the order of their numbers when they are numbered 1 to n (a phrase
    copied in two columns reads 1, 7, 2, 8…), else as written."""
    if None not in numbers and sorted(numbers) == list(range(1, len(numbers) + 1)):
        return [index for _number, index in sorted(zip(numbers, indexes, strict=True))]
    return indexes


def _next_phrase(indexes, shapes, numbers, pos: int, first: int, last: int):
    """(start, stop) of the first phrase from `pos` on (the longest at its start) whose
    checksum holds and that is set apart from the stretch's other words: what stands
    between them is not one of the phrase's own separators ("my seed phrase:\n…",
    "mi frase: …"). A window whose checksum holds by chance (one in sixteen for twelve
    words) inside a longer phrase with a typo is not set apart, so it leaves no word of
    that phrase behind."""
    for start in range(pos, last - _SEED_MIN + 1):
        if start > first and shapes[start - 1] == shapes[start]:
            continue  # a cheap refusal: the same separator on both sides
        for length in reversed(SEED_LENGTHS):
            stop = start + length
            if stop > last or (stop < last and shapes[stop - 1] == shapes[stop - 2]):
                continue
            window = indexes[start:stop]
            if None in window:
                continue
            if not bip39_checksum_valid(_in_order(window, numbers[start:stop])):
                continue
            inner = set(shapes[start : stop - 1])
            if start > first and shapes[start - 1] in inner:
                continue
            if stop < last and shapes[stop - 1] in inner:
                continue
            return start, stop
    return None


def _checksum_somewhere(indexes: list[int | None]) -> bool:
    """A valid checksum over the whole stretch, or over a phrase at either of its ends
    (a longer run is removed whole; the ends are where a pasted phrase sits)."""
    for length in SEED_LENGTHS:
        for window in (indexes[:length], indexes[-length:]):
            if len(window) == length and None not in window and bip39_checksum_valid(window):
                return True
    return False


def _has_five_list_words_in_a_row(text: str, known, prefixes) -> bool:
    """A quick pass before the real search: a phrase (at most one word in twelve off its
    list) always holds five consecutive words that are on some list."""
    run = 0
    for match in _TOKEN.finditer(text):
        word = _fold(match.group(0))
        if word in known or word[:4] in prefixes:
            run += 1
            if run >= 5:
                return True
        else:
            run = 0
    return False


def remove_seed_phrases(text: str) -> tuple[str, int, int]:
    """Remove seed phrases; returns (text, with a valid checksum, without one)."""
    spans: list[list] = []
    known, prefixes = _any_list()
    if not _has_five_list_words_in_a_row(text, known, prefixes):
        return text, 0, 0
    for chain in _chains(text):
        folded = [_fold(m.group(0)) for m in chain]
        # Cheap test first: a phrase (at most one word in twelve off its list) holds a run
        # of at least five consecutive words that are on some list.
        longest = run = 0
        for word in folded:
            run = run + 1 if (word in known or word[:4] in prefixes) else 0
            longest = max(longest, run)
        if longest < 5:
            continue
        shapes = [_shape(text[a.end() : b.start()]) for a, b in pairwise(chain)]
        numbers = [_number_before(text, m.start()) for m in chain]
        for wordlist in bip39_lists():
            indexes = [wordlist.lookup(word) for word in folded]
            for first, last, valid in _phrase_groups(indexes, shapes, numbers):
                start = chain[first].start()
                before = _NUMBERING_BEFORE.search(text, max(0, start - 5), start)
                if before is not None:
                    start = before.start()
                spans.append([start, chain[last - 1].end(), valid])
    if not spans:
        return text, 0, 0
    spans.sort()
    merged = [spans[0]]
    for span in spans[1:]:
        if span[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], span[1])
            merged[-1][2] = merged[-1][2] or span[2]
        else:
            merged.append(span)
    out = []
    pos = 0
    for start, end, _valid in merged:
        out.append(text[pos:start])
        out.append(REMOVED)
        pos = end
    out.append(text[pos:])
    valid = sum(1 for span in merged if span[2])
    return "".join(out), valid, len(merged) - valid
