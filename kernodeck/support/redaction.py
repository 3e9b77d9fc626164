"""Secret removal: what is taken out of support messages and attachments before storage.

Customers paste logs, commands and configuration into problem reports. Anything that
grants access (a private key, a wallet's seed phrase, an API token, a password) is
replaced by `[removed]` before the text is stored or shown to staff, and the customer
is told what was removed and why. The rules are deliberately shaped so that ordinary
technical output (tracebacks, `pip freeze`, CUDA errors, `nvidia-smi`, build
configurations) passes unchanged: each rule matches a recognisable secret shape, not
"anything long and random".
"""

import re
from dataclasses import dataclass
from functools import lru_cache

from django.utils.translation import gettext_lazy as _

REMOVED = "[removed]"

# Why each kind is removed, in words a customer reads next to the notice.
KIND_LABELS = {
    "private_key": _("a private key block"),
    "extended_private_key": _("a wallet's extended private key"),
    "seed_phrase": _("a wallet recovery phrase (BIP39 words)"),
    "huggingface_token": _("a Hugging Face token"),
    "openai_key": _("an API key (sk-…)"),
    "github_token": _("a GitHub token"),
    "aws_key": _("an AWS access key"),
    "slack_token": _("a Slack token or webhook"),
    "jwt": _("a signed web token (JWT)"),
    "url_password": _("a password inside a URL"),
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

# (kind, pattern, group to replace or 0 for the whole match), applied in this order.
_RULES: list[tuple[str, re.Pattern, int]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*?PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
            re.DOTALL,
        ),
        0,
    ),
    (
        "extended_private_key",
        re.compile(_NOT_ALNUM_BEFORE + r"[xyztuvXYZ]prv[1-9A-HJ-NP-Za-km-z]{100,}"),
        0,
    ),
    ("kernodeck_token", re.compile(_NOT_ALNUM_BEFORE + r"kd_[A-Za-z0-9_\-]{20,}"), 0),
    ("huggingface_token", re.compile(_NOT_ALNUM_BEFORE + r"hf_[A-Za-z0-9]{20,}"), 0),
    (
        "openai_key",
        re.compile(_NOT_ALNUM_BEFORE + r"sk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_\-]{20,}"),
        0,
    ),
    (
        "github_token",
        re.compile(
            _NOT_ALNUM_BEFORE + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"
        ),
        0,
    ),
    (
        "aws_key",
        re.compile(_NOT_ALNUM_BEFORE + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _NOT_ALNUM_AFTER),
        0,
    ),
    (
        "slack_token",
        re.compile(
            _NOT_ALNUM_BEFORE
            + r"(?:xox[abposr]-[A-Za-z0-9\-]{10,}"
            + r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]+)"
        ),
        0,
    ),
    (
        "jwt",
        re.compile(
            _NOT_ALNUM_BEFORE + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"
        ),
        0,
    ),
    # scheme://user:password@host — only the password goes.
    (
        "url_password",
        re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@]{1,200}:([^\s@/]{1,500})@"),
        1,
    ),
]

# NAME=value or NAME: value where the name ends in a secret word (HF_TOKEN, db_password,
# client_secret, api_key...). `==` (pip pins) and names that only start with one
# (`tokenizers`) do not match. The pattern starts at the secret word itself: a pattern for
# the whole name would try every position of a long identifier (quadratic time on
# hostile input), and the rest of the name stays as it was anyway.
_ASSIGNMENT = re.compile(
    r"(?:password|passwd|passphrase|token|secret|secret_?key|api_?key|access_?key"
    r"|private_?key)"
    r"(?P<sep>[\"']?[ \t]*[=:](?!=)[ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;()\[\]{}]+)",
    re.IGNORECASE,
)
# Values that are code or placeholders, not secrets: None, True, a dotted name, a call.
_NOT_A_SECRET = re.compile(
    r"^(?:none|null|true|false|nil|\*+|<[^>]*>|\$\{?\w+\}?|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)$",
    re.IGNORECASE,
)


@lru_cache(maxsize=1)
def bip39_words() -> frozenset[str]:
    """The 2048 English BIP39 words (from bip_utils, a dependency already)."""
    from bip_utils import Bip39Languages
    from bip_utils.bip.bip39.bip39_mnemonic_utils import Bip39WordsListGetter

    words = Bip39WordsListGetter().GetByLanguage(Bip39Languages.ENGLISH)
    return frozenset(words.GetWordAtIdx(i) for i in range(words.Length()))


# A word, optionally numbered ("1. abandon", "1) abandon", "01 abandon"), in a run.
_WORD = re.compile(r"(?:\d{1,2}[.):]?\s+)?([a-z]{3,8})\b")
_SEED_MIN = 12


def _remove_seed_phrases(text: str) -> tuple[str, int]:
    """Replace runs of 12 or more BIP39 words: a wallet's recovery phrase has 12 to 24, and
    a longer run contains one, so the whole run goes."""
    words = bip39_words()
    found = 0
    out = []
    pos = 0
    scan = 0
    while True:
        match = _WORD.search(text, scan)
        if match is None:
            break
        run_start = match.start()
        run_end = match.end()
        count = 0
        cursor = match
        while cursor is not None and cursor.group(1) in words:
            count += 1
            run_end = cursor.end()
            following = text[run_end : run_end + 40]
            nxt = re.match(r"[\s,]+", following)
            if nxt is None:
                break
            candidate = _WORD.match(text, run_end + nxt.end())
            cursor = candidate
        if count >= _SEED_MIN:
            out.append(text[pos:run_start])
            out.append(REMOVED)
            pos = run_end
            found += 1
            scan = run_end
        else:
            scan = match.end()
    out.append(text[pos:])
    return "".join(out), found


def _assignment(match: re.Match, counter: list[int]) -> str:
    value = match.group("value")
    bare = value.strip("\"'")
    if len(bare) < 4 or bare == REMOVED or _NOT_A_SECRET.match(bare):
        return match.group(0)
    if match.end() < len(match.string) and match.string[match.end()] in "([":
        return match.group(0)  # a call or an index: code, not a literal secret
    counter[0] += 1
    quote = value[0] if value[:1] in {'"', "'"} else ""
    keep = match.group(0)[: match.start("value") - match.start()]
    return f"{keep}{quote}{REMOVED}{quote}"


def redact(text: str, *, known_secrets: tuple[str, ...] | list[str] = ()) -> Redacted:
    """Remove secrets from `text`; `known_secrets` are exact values to remove as well
    (the rental's notebook and inference tokens)."""
    counts: dict[str, int] = {}

    def add(kind, n):
        if n:
            counts[kind] = counts.get(kind, 0) + n

    for secret in sorted({s for s in known_secrets if s and len(s) >= 6}, key=len, reverse=True):
        n = text.count(secret)
        if n:
            text = text.replace(secret, REMOVED)
            add("rental_secret", n)

    for kind, pattern, group in _RULES:
        if group == 0:
            text, n = pattern.subn(REMOVED, text)
        else:
            n = 0

            def replace(m, group=group):
                return (
                    m.group(0)[: m.start(group) - m.start()]
                    + REMOVED
                    + m.group(0)[m.end(group) - m.start() :]
                )

            text, n = pattern.subn(replace, text)
        add(kind, n)

    counter = [0]
    text = _ASSIGNMENT.sub(lambda m: _assignment(m, counter), text)
    add("assignment", counter[0])

    text, n = _remove_seed_phrases(text)
    add("seed_phrase", n)

    order = list(KIND_LABELS)
    findings = tuple(Finding(k, counts[k]) for k in sorted(counts, key=order.index))
    return Redacted(text=text, findings=findings)
