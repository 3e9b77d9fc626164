"""The host agent: the package `kdagent`, shipped to nodes as one zipapp file.

`zipapp_bytes()` builds the archive the `ssh` driver copies to a node and checks by SHA-256.
The build is deterministic (sorted names, fixed timestamps and modes, no compression), so
the same source always gives the same bytes and the same hash. `python -m
kernodeck.provisioning.agent OUT.pyz` writes it to a file for an operator to inspect.
"""

from __future__ import annotations

import functools
import io
import zipapp
import zipfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent / "kdagent"
ARCHIVE_NAME = "kernodeck_agent.pyz"
INTERPRETER = "/usr/bin/env python3"
MAIN = b"import sys\n\nfrom kdagent.cli import main\n\nsys.exit(main())\n"
STAMP = (1980, 1, 1, 0, 0, 0)


def _entry(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=STAMP)
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_STORED
    zf.writestr(info, data)


@functools.lru_cache(maxsize=1)
def zipapp_bytes() -> bytes:
    """The agent as one executable zipapp (`python3 kernodeck_agent.pyz COMMAND`)."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        _entry(zf, "__main__.py", MAIN)
        for path in sorted(PACKAGE.rglob("*.py")):
            if "__pycache__" not in path.parts:
                _entry(zf, f"kdagent/{path.relative_to(PACKAGE).as_posix()}", path.read_bytes())
    inner.seek(0)
    out = io.BytesIO()
    zipapp.create_archive(inner, out, interpreter=INTERPRETER)
    return out.getvalue()


def write_zipapp(target: Path | str) -> Path:
    target = Path(target)
    target.write_bytes(zipapp_bytes())
    target.chmod(0o755)
    return target
