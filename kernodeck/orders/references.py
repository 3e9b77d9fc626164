"""Public order references: short, unguessable, easy to read aloud.

`KD-` then two groups of four characters from Crockford's base32 alphabet (no I, L, O or
U, so nothing is mistaken for 1, 0 or V): 32**8, about 1.1e12 possibilities.
"""

import re
import secrets

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
PATTERN = re.compile(r"^KD-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$")


def new_reference() -> str:
    chars = "".join(secrets.choice(ALPHABET) for _ in range(8))
    return f"KD-{chars[:4]}-{chars[4:]}"
