"""The input layer: what Kernodeck accepts from outside, refused at the edge with 4xx.

Numbers are ASCII digits only (`str.isdigit()` also accepts "³" and "٣", which `int()`
refuses or reads differently), of bounded length; text never carries NUL bytes
(PostgreSQL refuses them); emails fit the 254 characters of the standard. Services call
these helpers; `core.middleware.InputGuardMiddleware` applies the NUL and size rules to
every request before any view runs.
"""

import re

from kernodeck.core.errors import InvalidInput

# At most 9 digits: every whole number Kernodeck takes (units, days, pages) fits easily,
# and nothing near a database integer's limit gets through.
_ASCII_INT = re.compile(r"[+-]?[0-9]{1,9}", re.ASCII)
MAX_EMAIL_LENGTH = 254


def parse_int(value, *, field: str, message) -> int:
    """A whole number from form or JSON input, or InvalidInput(message, field).

    JSON integers pass as they are (range checks are the caller's); `true` is not a number;
    text must be 1-9 ASCII digits with an optional sign. `message` is the refusal's words,
    or a function that writes them (called only to refuse: a translation per refusal, not
    per number taken).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = value.strip() if isinstance(value, str) else ""
    if not _ASCII_INT.fullmatch(text):
        raise InvalidInput(message() if callable(message) else message, field=field)
    return int(text)


def nul_path(data, path: str = "") -> str | None:
    """The dotted path of the first key or string in `data` containing a NUL byte."""
    if isinstance(data, str):
        return path or "body" if "\x00" in data else None
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if "\x00" in str(key):
                return where.replace("\x00", "")
            found = nul_path(value, where)
            if found:
                return found
    if isinstance(data, list):
        for index, value in enumerate(data):
            found = nul_path(value, f"{path}.{index}" if path else str(index))
            if found:
                return found
    return None
