"""Secrets in text: the shapes of keys, tokens and passwords, and `redact` that applies them.

Each rule matches a recognisable secret shape (a key block, a token's prefix, a password
after its name), some with a check that refuses look-alikes (a WIF key's checksum, a value
that is a word). `redact` normalises the text, removes the rental's known secrets, applies
the rules in order, then the seed-phrase search (in `seed_phrases`, apart for its size and
its word lists).
"""

import hashlib
import re
import unicodedata

from kernodeck.support.redaction.findings import KIND_LABELS, REMOVED, Finding, Redacted
from kernodeck.support.redaction.seed_phrases import remove_seed_phrases

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


# Four to eight hyphens, or dashes a chat made of them (bounded: a long run is linear).
_PEM_DASHES = r"(?:-{4,8}|[\u2013\u2014][\u2013\u2014\-]{0,7})"
_PEM_SPACE = r"[ \t\u00a0]"
_PEM_LABEL = (
    rf"{_PEM_SPACE}+(?:(?-i:[A-Z0-9]+){_PEM_SPACE}+)*?PRIVATE{_PEM_SPACE}+KEY"
    rf"(?:{_PEM_SPACE}+BLOCK)?{_PEM_SPACE}*"
)
# The rest of a line of base64, then whole lines of it (16 characters or more: a word on
# the next line is prose). Each line's end is required, so a run splits only one way.
_BASE64_LINES = r"[A-Za-z0-9+/=]*(?:[ \t]*\r?\n[A-Za-z0-9+/=]{16,}(?=[ \t]*(?:\r?\n|\Z)))*"

# (kind, pattern, group to replace (0: the whole match; a tuple: whichever took part), check
# or None), in this order;
# a match the check refuses stays as it was.
_RULES: list[tuple] = [
    # A PEM block, as written or as a chat or a word processor leaves it: four or six
    # dashes, dashes turned into en or em dashes, a no-break space, lower case.
    (
        "private_key",
        re.compile(
            _PEM_DASHES
            + r"[ \t\u00a0]*BEGIN"
            + _PEM_LABEL
            + _PEM_DASHES
            + r"(?:.*?"
            + _PEM_DASHES
            + r"[ \t\u00a0]*END"
            + _PEM_LABEL
            + _PEM_DASHES
            + r"|.*\Z)",
            re.DOTALL | re.IGNORECASE,
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
    # Its private lines pasted without the rest of the file.
    (
        "private_key",
        re.compile(
            r"Private-Lines:[ \t]*\d+[ \t]*\r?\n"
            + _BASE64_LINES
            + r"(?:\r?\nPrivate-(?:MAC|Hash):[^\n]*)?"
        ),
        0,
        None,
    ),
    # An OpenSSH private key's body without its BEGIN line ("openssh-key-v1" in base64).
    ("private_key", re.compile(r"b3BlbnNzaC1rZXktdjE[A-Za-z0-9+/=]*" + _BASE64_LINES), 0, None),
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
            + r"hf_(?P<first>[A-Za-z0-9]{4,33})[ \t]*\\?\r?\n[ \t]*(?P<rest>[A-Za-z0-9]{1,36})"
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
        lambda m: not _NOT_A_SECRET.match(m.group(1)),  # -p$MYSQL_PWD names it
    ),
    # --password VALUE (with a space: `--password=VALUE` is an assignment below): after a
    # program that takes one (`mysql -u root --password hunter`) whatever the value is,
    # elsewhere ("use the --password flag") only a value that is not a word.
    (
        "command_password",
        re.compile(r"(?<![\w-])--(?:password|passwd|pass)[ \t]+(?:\"([^\"\n]+)\"|'([^'\n]+)')"),
        (1, 2),
        lambda m: not _NOT_A_SECRET.match(m.group(1) or m.group(2)),
    ),
    (
        "command_password",
        re.compile(r"(?<![\w-])--(?:password|passwd|pass)[ \t]+(?!-)([^\s\"',;)]+)"),
        1,
        lambda m: (
            _looks_secret(m.group(1))
            or (_after_a_program(m) and not _NOT_A_SECRET.match(m.group(1)))
        ),
    ),
    # docker login -p VALUE; curl -u user:password (also --user). The patterns start at
    # the option and the check looks back for the program: linear on a long line.
    (
        "command_password",
        re.compile(r"(?<![\w-])-p[ \t]+(?!-)(\S+)"),
        1,
        lambda m: (
            _after_a_program(m, _DOCKER_LOGIN, "login") and not _NOT_A_SECRET.match(m.group(1))
        ),
    ),
    (
        "command_password",
        re.compile(r"(?<![\w-])(?:-u|--user)[ \t=]*[\"']?[^\s:\"']{1,100}:([^\s\"']+)"),
        1,
        lambda m: _after_a_program(m, _CURL, "curl") and not _NOT_A_SECRET.match(m.group(1)),
    ),
    # A form or query string, URL-encoded (once or twice): password%3D…, api_key%3D…, and
    # URL-encoded JSON: %22password%22%3A%22…%22. The value ends at an encoded & or ".
    (
        "assignment",
        re.compile(
            r"(?:password|passwd|pwd|token|secret|api[_-]?key|access_?key)"
            r"(?:%(?:25)?22)?%(?:25)?3[DA](?:%(?:25)?22)?"
            r"((?:[^&\s\"'<>%]|%(?!(?:25)?2[26])(?:25)?[0-9A-F]{2})+)",
            re.IGNORECASE,
        ),
        1,
        lambda m: len(m.group(1)) >= 4,
    ),
]

# Programs whose --password takes the next word as the password.
_PASSWORD_PROGRAMS = re.compile(
    r"(?:^|[\s;&|(/])(?:mysql\w*|mariadb[\w-]*|mongo\w*|docker|podman|nerdctl|helm|redis-cli"
    r"|sshpass|pgcli|twine|rabbitmqctl|keytool|openssl|zip|7z|wget|curl|vncpasswd|htpasswd)\b",
    re.IGNORECASE | re.MULTILINE,  # ^: the line's start, where the search begins
)


_DOCKER_LOGIN = re.compile(r"\b(?:docker|podman|nerdctl)[ \t]+login\b")
_CURL = re.compile(r"\bcurl\b")


def _after_a_program(
    match: re.Match, program: re.Pattern = _PASSWORD_PROGRAMS, hint: str = ""
) -> bool:
    """Whether `program` is named earlier on the match's line (300 characters back);
    `hint`, a word the program's name holds, is looked for first (much faster)."""
    text = match.string
    window = max(match.start() - 300, 0)
    line_start = text.rfind("\n", window, match.start()) + 1 or window
    if hint and text.find(hint, line_start, match.start()) == -1:
        return False
    return bool(program.search(text, line_start, match.start()))


# NAME=value or NAME: value where the name ends in a secret word (HF_TOKEN, db_password,
# client_secret, api_key...). `==` (pip pins) and names that only start with one
# (`tokenizers`) do not match. The pattern starts at the secret word itself: a pattern for
# the whole name would try every position of a long identifier (quadratic time on
# hostile input), and the rest of the name stays as it was anyway.
_ASSIGNMENT = re.compile(
    r"(?P<name>password|passwd|passphrase|contrase(?:ñ|n)a|token|secret|secret_?key|api[_-]?key"
    r"|access_?key|private_?key)"
    r"(?P<sep>[\"']?[ \t]*[=:](?!=)[ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|<[^<>\n]{0,80}>|[^\s\"',;()\[\]{}&]+)",
    re.IGNORECASE,
)
# Values that are code or placeholders, not secrets: None, True, a dotted name, a call.
_NOT_A_SECRET = re.compile(
    r"^(?:none|null|true|false|nil|\*+|<[^>]*>|\$\{?\w+\}?|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)$",
    re.IGNORECASE,
)

# A configuration key at the start of its line (YAML, .env, INI): `  db_password: x`.
_KEY_AT_LINE_START = re.compile(r"""(?:^|\n)[ \t]*(?:-[ \t]+)?["']?[\w.\-]*\Z""")

# Words that error messages and forms put after `token:` or `contraseña:`: a state or a
# type, never the value (English and Spanish, folded: no accents, lower case).
_STATUS_TEXT = """
expected invalid incorrect wrong expired revoked required missing empty unset unknown denied
rejected failed please optional hidden changed reset mismatch redacted bytes string bool float
esperado esperada invalido invalida incorrecto incorrecta erroneo erronea caducado caducada
expirado expirada revocado revocada requerido requerida obligatorio obligatoria vacio vacia
desconocido desconocida denegado denegada rechazado rechazada fallido fallida olvidado olvidada
cambiado cambiada oculto oculta ninguno ninguna
"""
_STATUS_WORDS = frozenset(_STATUS_TEXT.split())
# A path, not a secret: `secret: /run/secrets/hf_token`, `secret:project/train.py`. Each
# part is a word, a file name or an upper-case name; none mixes case like a token does.
_PATH_PART = re.compile(r"[A-Z]?[a-z0-9_.\-]*|[A-Z0-9_.\-]+")
_EXTENSION = re.compile(r"[a-z0-9]\.[A-Za-z]{1,5}\Z")
# `max_token: 4096`, `num_token=512`, `pad_token: x`: a count or a special token's name.
_COUNT_PREFIX = re.compile(
    r"(?<![A-Za-z0-9])(?:max|min|num|n|total|pad|eos|bos|unk|sep|cls|mask)_\Z", re.IGNORECASE
)
# What follows `token:` in counters and progress bars: `Token: 4096`, `token: 100%|███|`.
_COUNT = re.compile(r"\d{1,8}(?:[.,]\d+)?[kKMB]?|\d{1,3}%.*")


def _is_path(value: str) -> bool:
    """A path from the root, the home or here, or ending in a file name (`a/train.py`).
    Checked part by part: one pattern for the whole path would backtrack exponentially on
    a long value that fails at its end."""
    parts = value.removeprefix("~").split("/")
    if len(parts) < 2 or any(not p for p in parts[1:-1]):
        return False
    if not all(_PATH_PART.fullmatch(p) for p in parts):
        return False
    return value.startswith(("/", "~/", "./", "../")) or bool(_EXTENSION.search(value))


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _prose_after(text: str, end: int) -> bool:
    """Whether more words follow on the line (`Token: please check the token`), not a
    comment as after a configuration value."""
    line_end = text.find("\n", end, end + 200)
    rest = text[end : line_end if line_end != -1 else end + 200].strip()
    return bool(rest) and not rest.startswith(("#", "//", ";"))


def _assignment(match: re.Match, counter: list[int]) -> str:
    value = match.group("value")
    bare = value.strip("\"'")
    if len(bare) < 4 or bare == REMOVED or _NOT_A_SECRET.match(bare) or _is_path(bare):
        return match.group(0)
    text = match.string
    if match.end() < len(text) and text[match.end()] in "([":
        return match.group(0)  # a call or an index: code, not a literal secret
    if match.start() and text[match.start() - 1] in "/\\":
        return match.group(0)  # part of a path: /home/ana/secret:project/train.py
    if _COUNT_PREFIX.search(text, max(match.start() - 8, 0), match.start()):
        return match.group(0)  # max_token=2048: a count, not a token
    quoted = value[:1] in {'"', "'"}
    if not quoted:
        if _fold(bare) in _STATUS_WORDS:
            return match.group(0)  # `Password: incorrect`, `Token: inválido`
        if match.group("name").lower() == "token" and _COUNT.fullmatch(bare):
            return match.group(0)  # `Token: 4096`: how many, not which
    if "=" not in match.group("sep") and not quoted:
        # `token: expected ')'` in an error message is prose; `password: x` as a
        # configuration key is not. Mid-line, only a value that is not a word goes; at the
        # start of a line, a word followed by more words is prose too.
        window = max(match.start() - 120, 0)  # a key name is short; look no further back
        line_start = text.rfind("\n", window, match.start())
        key = None
        if line_start != -1 or window == 0:
            key = _KEY_AT_LINE_START.search(text, max(line_start, 0), match.start())
        if not _looks_secret(bare) and (key is None or _prose_after(text, match.end())):
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
    # Characters that show nothing but have a use elsewhere (variation selectors and tag
    # characters build emoji, the grapheme joiner and the fillers belong to some scripts):
    # they go only between two visible ASCII characters, where they can only hide a split.
    "|(?<=[!-~])[\u034f\u061c\u115f\u1160\u17b4\u17b5\u3164\uffa0\ufe00-\ufe0f"
    "\U000e0000-\U000e007f]+(?=[!-~])"
)
# The rest of a token that a terminal or an editor wrapped onto the next line: a whole line
# of token characters right after a removed one, mixing upper case, lower case and digits
# (a word or a number on the next line is not part of it).
_WRAPPED_REST = re.compile(
    re.escape(REMOVED) + r"([ \t]*\\?\r?\n[ \t]*)([A-Za-z0-9_\-]{6,200})(?=[ \t]*(?:\r?\n|\Z))"
)


def _rest_of_a_token(match: re.Match) -> str:
    rest = match.group(2)
    if any(c.isdigit() for c in rest) and rest.lower() != rest and rest.upper() != rest:
        return REMOVED
    return match.group(0)


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
            if isinstance(group, tuple):  # alternatives: the one that took part
                group = next(g for g in group if m.group(g) is not None)
            return (
                m.group(0)[: m.start(group) - m.start()]
                + REMOVED
                + m.group(0)[m.end(group) - m.start() :]
            )

        text = pattern.sub(replace, text)
        add(kind, found[0])

    if counts:
        text = _WRAPPED_REST.sub(_rest_of_a_token, text)

    counter = [0]
    text = _ASSIGNMENT.sub(lambda m: _assignment(m, counter), text)
    add("assignment", counter[0])

    text, valid, unchecked = remove_seed_phrases(text)
    add("seed_phrase", valid)
    add("seed_phrase_unchecked", unchecked)

    order = list(KIND_LABELS)
    findings = tuple(Finding(k, counts[k]) for k in sorted(counts, key=order.index))
    return Redacted(text=text, findings=findings)
