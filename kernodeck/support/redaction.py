"""Secret removal: what is taken out of support messages and attachments before storage.

Customers paste logs, commands and configuration into problem reports. Anything that
grants access (a private key, a wallet's seed phrase, an API token, a password) is
replaced by `[removed]` before the text is stored or shown to staff, and the customer
is told what was removed and why. The rules are deliberately shaped so that ordinary
technical output (tracebacks, `pip freeze`, CUDA errors, `nvidia-smi`, build
configurations) passes unchanged: each rule matches a recognisable secret shape, not
"anything long and random".
"""

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from django.utils.translation import gettext_lazy as _

REMOVED = "[removed]"

# Why each kind is removed, in words a customer reads next to the notice.
KIND_LABELS = {
    "private_key": _("a private key block"),
    "extended_private_key": _("a wallet's extended private key"),
    "seed_phrase": _("a wallet recovery phrase (BIP39 words)"),
    "seed_phrase_unchecked": _(
        "words that look like a wallet recovery phrase (nearly all from one BIP39 list, "
        "without a valid checksum): removed to be safe"
    ),
    "huggingface_token": _("a Hugging Face token"),
    "openai_key": _("an API key (sk-…)"),
    "github_token": _("a GitHub token"),
    "aws_key": _("an AWS access key"),
    "slack_token": _("a Slack token or webhook"),
    "jwt": _("a signed web token (JWT)"),
    "url_password": _("a password inside a URL"),
    "authorization_header": _("the credential of an Authorization header"),
    "command_password": _("a password given on a command line"),
    "keypair_array": _("a wallet keypair (an array of 64 numbers, like Solana's id.json)"),
    "wif_key": _("a Bitcoin private key (WIF)"),
    "assignment": _("a password, token or secret assignment"),
    "kernodeck_token": _("a Kernodeck API token"),
    "rental_secret": _("your rental's notebook or inference secret"),
}


@dataclass(frozen=True)
class Finding:
    kind: str
    count: int

    @property
    def label(self) -> str:
        return str(KIND_LABELS[self.kind])


@dataclass(frozen=True)
class Redacted:
    text: str
    findings: tuple[Finding, ...]

    @property
    def changed(self) -> bool:
        return bool(self.findings)

    def as_list(self) -> list[dict]:
        return [{"kind": f.kind, "label": f.label, "count": f.count} for f in self.findings]


_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9_])"
_NOT_ALNUM_AFTER = r"(?![A-Za-z0-9_])"

_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _base58check(text: str) -> bytes | None:
    """The payload of a Base58Check string, or None when its checksum does not hold."""
    number = 0
    for char in text:
        number = number * 58 + _BASE58.index(char)
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    raw = b"\0" * (len(text) - len(text.lstrip("1"))) + raw
    payload, checksum = raw[:-4], raw[-4:]
    if hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] != checksum:
        return None
    return payload


def _is_wif(match: re.Match) -> bool:
    """A Bitcoin private key in Wallet Import Format: version 0x80 (mainnet) or 0xef
    (testnet), 32 bytes, and 0x01 when the public key is compressed."""
    payload = _base58check(match.group(0))
    if payload is None or payload[:1] not in {b"\x80", b"\xef"}:
        return False
    return len(payload) == 33 or (len(payload) == 34 and payload[-1] == 1)


def _is_keypair(match: re.Match) -> bool:
    return all(int(n) <= 255 for n in re.findall(r"\d+", match.group(0)))


def _hf_wrapped(match: re.Match) -> bool:
    """`hf_` and 34 letters, possibly broken over two lines by a terminal or an editor."""
    first, rest = match.group("first"), match.group("rest")
    return len(first) + len(rest) == 34 or (len(first) < 20 and len(first) + len(rest) >= 20)


def _looks_secret(value: str) -> bool:
    """A value after `secret:` or `--password ` (weaker signs than `=`) that is not a word:
    it holds a digit or a symbol, or mixes case inside it."""
    if len(value) < 4 or value == REMOVED or _NOT_A_SECRET.match(value):
        return False
    if any(c.isdigit() for c in value) or not value.isalpha():
        return True
    return value[1:] != value[1:].lower()


# (kind, pattern, group to replace or 0 for the whole match, check or None), in this order;
# a match the check refuses stays as it was.
_RULES: list[tuple] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
        0,
        None,
    ),
    # A PuTTY key file (.ppk): from its first line to the Private-MAC line.
    (
        "private_key",
        re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-(?:MAC|Hash):[^\n]*|\Z)", re.DOTALL),
        0,
        None,
    ),
    # A Solana (and other ed25519 wallets') id.json: the keypair as 64 numbers.
    (
        "keypair_array",
        re.compile(r"\[\s*(?:\d{1,3}\s*,\s*){63}\d{1,3}\s*\]"),
        0,
        _is_keypair,
    ),
    (
        "wif_key",
        re.compile(r"(?<![A-Za-z0-9])[59KLc][1-9A-HJ-NP-Za-km-z]{50,51}(?![A-Za-z0-9])"),
        0,
        _is_wif,
    ),
    (
        "extended_private_key",
        re.compile(_NOT_ALNUM_BEFORE + r"[xyztuvXYZ]prv[1-9A-HJ-NP-Za-km-z]{100,}"),
        0,
        None,
    ),
    ("kernodeck_token", re.compile(_NOT_ALNUM_BEFORE + r"kd_[A-Za-z0-9_\-]{20,}"), 0, None),
    (
        "huggingface_token",
        re.compile(
            _NOT_ALNUM_BEFORE
            + r"hf_(?P<first>[A-Za-z0-9]{4,33})[ \t]*\r?\n[ \t]*(?P<rest>[A-Za-z0-9]{1,36})"
            + _NOT_ALNUM_AFTER
        ),
        0,
        _hf_wrapped,
    ),
    ("huggingface_token", re.compile(_NOT_ALNUM_BEFORE + r"hf_[A-Za-z0-9]{20,}"), 0, None),
    (
        "openai_key",
        re.compile(_NOT_ALNUM_BEFORE + r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{20,}"),
        0,
        None,
    ),
    (
        "github_token",
        re.compile(
            _NOT_ALNUM_BEFORE + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"
        ),
        0,
        None,
    ),
    (
        "aws_key",
        re.compile(_NOT_ALNUM_BEFORE + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _NOT_ALNUM_AFTER),
        0,
        None,
    ),
    (
        "slack_token",
        re.compile(
            _NOT_ALNUM_BEFORE
            + r"(?:xox[abposr]-[A-Za-z0-9\-]{10,}"
            + r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+)"
        ),
        0,
        None,
    ),
    (
        "jwt",
        re.compile(
            _NOT_ALNUM_BEFORE + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
        ),
        0,
        None,
    ),
    # scheme://user:password@host — only the password goes.
    (
        "url_password",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@]{1,200}:([^\s@/]{1,500})@"),
        1,
        None,
    ),
    # An Authorization header (curl -H, HTTP dumps, code): the credential after the scheme.
    (
        "authorization_header",
        re.compile(
            r"\bAuthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:Bearer|Token|Basic|Bot)[ \t]+"
            r"([A-Za-z0-9._~+/\-]{8,}=*)",
            re.IGNORECASE,
        ),
        1,
        None,
    ),
    # mysql/mariadb take the password glued to -p: `mysql -uroot -pS3cret db`.
    (
        "command_password",
        re.compile(
            r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b"
            r"[^\n]{0,300}?[ \t]-p([^\s\-]\S*)"
        ),
        1,
        None,
    ),
    # --password VALUE (with a space: `--password=VALUE` is an assignment below).
    (
        "command_password",
        re.compile(r"(?<![\w-])--(?:password|passwd|pass)[ \t]+(?!-)([^\s\"',;)]+)"),
        1,
        lambda m: _looks_secret(m.group(1)),
    ),
    # A form or query string, URL-encoded: password%3D…, api_key%3D….
    (
        "assignment",
        re.compile(
            r"(?:password|passwd|pwd|token|secret|api_?key|apikey|access_?key)%3D"
            r"([^&\s\"'<>%]{2,}(?:%[0-9A-Fa-f]{2}[^&\s\"'<>%]*)*)",
            re.IGNORECASE,
        ),
        1,
        lambda m: len(m.group(1)) >= 4,
    ),
]

# NAME=value or NAME: value where the name ends in a secret word (HF_TOKEN, db_password,
# client_secret, api_key...). `==` (pip pins) and names that only start with one
# (`tokenizers`) do not match. The pattern starts at the secret word itself: a pattern for
# the whole name would try every position of a long identifier (quadratic time on
# hostile input), and the rest of the name stays as it was anyway.
_ASSIGNMENT = re.compile(
    r"(?:password|passwd|passphrase|contrase(?:ñ|n)a|token|secret|secret_?key|api_?key|access_?key"
    r"|private_?key)"
    r"(?P<sep>[\"']?[ \t]*[=:](?!=)[ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;()\[\]{}&]+)",
    re.IGNORECASE,
)
# Values that are code or placeholders, not secrets: None, True, a dotted name, a call.
_NOT_A_SECRET = re.compile(
    r"^(?:none|null|true|false|nil|\*+|<[^>]*>|\$\{?\w+\}?|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)$",
    re.IGNORECASE,
)


# -- seed phrases -------------------------------------------------------------------------
# A wallet's recovery phrase is 12, 15, 18, 21 or 24 words of one BIP39 list, in any case,
# with any separators, numbered or bulleted, one per line, or cut to the four letters that
# identify each word. Its last word carries a checksum: a run whose checksum holds is
# certainly a phrase; a run where nearly all words are on one list is removed too (a typo
# or a changed word breaks the checksum but not the danger), and the notice says so.

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


def _phrase_groups(indexes: list[int | None]):
    """(first, last + 1, checksum valid) for each stretch of at least 12 words where at
    most one word in twelve is not on the list."""
    runs = []
    start = None
    for i, value in enumerate([*indexes, None]):
        if value is not None and start is None:
            start = i
        elif value is None and start is not None:
            runs.append((start, i))
            start = None
    groups = []
    for run in runs:
        if groups:
            first, last, misses = groups[-1]
            if run[0] == last + 1 and misses + 1 <= (run[1] - first) // _SEED_MIN:
                groups[-1] = (first, run[1], misses + 1)
                continue
        groups.append((run[0], run[1], 0))
    for first, last, _misses in groups:
        if last - first < _SEED_MIN:
            continue
        yield first, last, _checksum_somewhere(indexes[first:last])


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


def _remove_seed_phrases(text: str) -> tuple[str, int, int]:
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
        for wordlist in bip39_lists():
            indexes = [wordlist.lookup(word) for word in folded]
            for first, last, valid in _phrase_groups(indexes):
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


# A configuration key at the start of its line (YAML, .env, INI): `  db_password: x`.
_KEY_AT_LINE_START = re.compile(r"""(?:^|\n)[ \t]*(?:-[ \t]+)?["']?[\w.\-]*\Z""")


def _assignment(match: re.Match, counter: list[int]) -> str:
    value = match.group("value")
    bare = value.strip("\"'")
    if len(bare) < 4 or bare == REMOVED or _NOT_A_SECRET.match(bare):
        return match.group(0)
    text = match.string
    if match.end() < len(text) and text[match.end()] in "([":
        return match.group(0)  # a call or an index: code, not a literal secret
    if match.start() and text[match.start() - 1] in "/\\":
        return match.group(0)  # part of a path: /home/ana/secret:project/train.py
    quoted = value[:1] in {'"', "'"}
    if "=" not in match.group("sep") and not quoted:
        # `token: expected ')'` in an error message is prose; `password: x` as a
        # configuration key is not. Mid-line, only a value that is not a word goes.
        window = max(match.start() - 120, 0)  # a key name is short; look no further back
        line_start = text.rfind("\n", window, match.start())
        key = None
        if line_start != -1 or window == 0:
            key = _KEY_AT_LINE_START.search(text, max(line_start, 0), match.start())
        if key is None and not _looks_secret(bare):
            return match.group(0)
    counter[0] += 1
    quote = value[0] if quoted else ""
    keep = match.group(0)[: match.start("value") - match.start()]
    return f"{keep}{quote}{REMOVED}{quote}"


# Characters that show nothing: zero-width space and joiners, word joiner, soft hyphen,
# byte-order mark, direction marks and isolates, the Mongolian vowel separator. Pasted
# inside a token they hide it from every rule, so they go before matching (and from the
# stored text: they carry nothing a reader sees). A zero-width joiner between two
# non-ASCII characters stays: it builds emoji and some scripts' letters.
_INVISIBLE = re.compile(
    "[\u00ad\u180e\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u2064"
    "\u2066-\u2069\ufeff]|(?<![\x80-\U0010ffff])\u200d|\u200d(?![\x80-\U0010ffff])"
)


def normalise(text: str) -> str:
    """The text as matched and stored: composed (NFC) and without invisible characters."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFC", text))


def redact(text: str, *, known_secrets: tuple[str, ...] | list[str] = ()) -> Redacted:
    """Remove secrets from `text`; `known_secrets` are exact values to remove as well
    (the rental's notebook and inference tokens). The text is normalised first (see
    `normalise`), so the result may differ from the input by invisible characters."""
    counts: dict[str, int] = {}
    text = normalise(text)

    def add(kind, n):
        if n:
            counts[kind] = counts.get(kind, 0) + n

    for secret in sorted({s for s in known_secrets if s and len(s) >= 6}, key=len, reverse=True):
        n = text.count(secret)
        if n:
            text = text.replace(secret, REMOVED)
            add("rental_secret", n)

    for kind, pattern, group, check in _RULES:
        found = [0]

        def replace(m, group=group, check=check, found=found):
            if check is not None and not check(m):
                return m.group(0)
            found[0] += 1
            if group == 0:
                return REMOVED
            return (
                m.group(0)[: m.start(group) - m.start()]
                + REMOVED
                + m.group(0)[m.end(group) - m.start() :]
            )

        text = pattern.sub(replace, text)
        add(kind, found[0])

    counter = [0]
    text = _ASSIGNMENT.sub(lambda m: _assignment(m, counter), text)
    add("assignment", counter[0])

    text, valid, unchecked = _remove_seed_phrases(text)
    add("seed_phrase", valid)
    add("seed_phrase_unchecked", unchecked)

    order = list(KIND_LABELS)
    findings = tuple(Finding(k, counts[k]) for k in sorted(counts, key=order.index))
    return Redacted(text=text, findings=findings)


# -- images -------------------------------------------------------------------------------
# A screenshot is stored as it came, but only the image itself: bytes appended after its
# end (where text hides from a viewer) and PNG text chunks / JPEG comments are cut off.
# Their text is still scanned, so the notice says what they held.

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_PNG_TEXT_CHUNKS = {b"tEXt", b"zTXt", b"iTXt"}


class NotAnImage(ValueError):
    """The bytes start like a PNG or JPEG but are not one."""


def image_split(data: bytes) -> tuple[bytes, bytes]:
    """(the image without text metadata, the bytes cut off: metadata and any trailer)."""
    if data.startswith(_PNG_SIGNATURE):
        return _png_split(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_split(data)
    raise NotAnImage


def _png_split(data: bytes) -> tuple[bytes, bytes]:
    kept = [_PNG_SIGNATURE]
    dropped = []
    pos = len(_PNG_SIGNATURE)
    while True:
        if pos + 12 > len(data):
            raise NotAnImage
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            raise NotAnImage
        (dropped if kind in _PNG_TEXT_CHUNKS else kept).append(data[pos:end])
        pos = end
        if kind == b"IEND":
            dropped.append(data[pos:])
            return b"".join(kept), b"".join(dropped)


def _jpeg_split(data: bytes) -> tuple[bytes, bytes]:
    kept = [b"\xff\xd8"]
    dropped = []
    pos = 2
    size = len(data)
    while True:
        if pos + 2 > size or data[pos] != 0xFF:
            raise NotAnImage
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker == 0xD9:  # end of image
            kept.append(data[pos : pos + 2])
            dropped.append(data[pos + 2 :])
            return b"".join(kept), b"".join(dropped)
        if 0xD0 <= marker <= 0xD7 or marker == 0x01:
            kept.append(data[pos : pos + 2])
            pos += 2
            continue
        if pos + 4 > size:
            raise NotAnImage
        end = pos + 2 + int.from_bytes(data[pos + 2 : pos + 4], "big")
        if end > size:
            raise NotAnImage
        if marker == 0xDA:  # start of scan: entropy-coded data up to the next marker
            scan = data.find(b"\xff", end)
            while (
                scan != -1
                and scan + 1 < size
                and (data[scan + 1] == 0 or 0xD0 <= data[scan + 1] <= 0xD7)
            ):
                scan = data.find(b"\xff", scan + 2)
            if scan == -1 or scan + 1 >= size:
                raise NotAnImage
            kept.append(data[pos:scan])
            pos = scan
            continue
        (dropped if marker == 0xFE else kept).append(data[pos:end])
        pos = end
