#!/usr/bin/env python3
"""How the redaction of support messages grows with hostile input (a ReDoS guard).

    python3 bench/redaction.py [--size 20000] [--repeat 5]

Needs ./.venv (run `python3 dev.py test --version` once to create it); no database. For each
hostile shape (the ones tests/support/test_redaction.py feeds redact(): runs of dashes,
schemes, user parts, assignments, numbered words, JWT heads, an unterminated key...) it
times redact() on that shape at --size characters and at four times that, the best of
--repeat runs, and prints a markdown table: milliseconds at each size and the growth. A
linear scan grows about 4x; a quadratic one 16x. A growth above 8x is marked SUPERLINEAR
and the exit status is 1. Below a few thousand characters the patterns' bounded repeats
({1,500} and the like) make any growth look steeper: keep --size at the default or above.
Every figure is from this run on this machine: on a busy machine run it again before
believing a mark. The unit test keeps only a hang guard: no unit test times anything.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("KERNODECK_DEBUG", "1")  # development settings: no keys needed

LINEAR_GROWTH, LIMIT = 4, 8


def shapes(size: int) -> dict[str, str]:
    """Hostile inputs of about `size` characters, by name."""

    def repeat(unit: str) -> str:
        return unit * max(1, size // len(unit))

    key = "-----BEGIN PRIVATE KEY-----"
    return {
        "dashed identifier": repeat("a-"),
        "long word": repeat("a"),
        "schemes": repeat("ab://"),
        "users": "a://" + repeat("b:"),
        "assignments": repeat("token="),
        "numbered words": repeat("1. abandon "),
        "jwt heads": repeat("eyJ"),
        "unterminated key": key + "x" * max(1, size - len(key)),
    }


def best_ms(function, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function(text)
        times.append(time.perf_counter() - started)
    return min(times) * 1000


def report(argv: list[str]) -> tuple[str, bool]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args(argv)

    import django

    django.setup()
    from kernodeck.support.redaction import redact

    redact("warm-up: compile the patterns, load the word list")
    small, large = shapes(options.size), shapes(options.size * LINEAR_GROWTH)
    lines = [
        f"| shape | ms at {options.size} chars | ms at {options.size * LINEAR_GROWTH} chars "
        "| growth |",
        "|---|---:|---:|---:|",
    ]
    superlinear = False
    for name in small:
        at_small = best_ms(redact, small[name], options.repeat)
        at_large = best_ms(redact, large[name], options.repeat)
        growth = at_large / max(at_small, 1e-3)
        mark = " SUPERLINEAR" if growth > LIMIT else ""
        superlinear = superlinear or bool(mark)
        lines.append(f"| {name} | {at_small:.2f} | {at_large:.2f} | {growth:.1f}x{mark} |")
    return "\n".join(lines), superlinear


def main() -> int:
    if PYTHON.exists() and Path(sys.prefix).resolve() != (ROOT / ".venv").resolve():
        command = [str(PYTHON), str(Path(__file__).resolve()), *sys.argv[1:]]
        return subprocess.run(command, check=False).returncode
    table, superlinear = report(sys.argv[1:])
    print(table)
    return 1 if superlinear else 0


if __name__ == "__main__":
    sys.exit(main())
