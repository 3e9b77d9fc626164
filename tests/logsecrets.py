"""The whole run's log, checked at its end: every line one JSON object, and no secret the
tests used in any of them (issue 26, item 4).

A handler like production's JSON one (`ContextFilter` + `JsonFormatter`) sits on the root
logger through every test and writes to a file per process; after each test the configured
secrets (`logformat.known_secrets()`, with what the test's `settings` changed) join the
list, as do those a test hands to `remember()`. The process that ends the run (the xdist
controller, or the only one) reads every file and fails the run, naming the file's line
and its logger, when a line is not JSON or holds one of them.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from kernodeck.observability.logformat import ContextFilter, JsonFormatter, known_secrets

FOLDER = "kernodeck-logs"
_extra: set[str] = set()
_seen: set[str] = set()
_handler: logging.Handler | None = None


def remember(secret: str) -> None:
    """A secret the test made (an API token, a password) that no log line may hold."""
    if secret and len(secret) >= 6:
        _extra.add(secret)


def _folder(config) -> Path | None:
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return None
    base = factory.getbasetemp()
    # An xdist worker's base is its own folder below the run's; the controller's is the run's.
    shared = base.parent if hasattr(config, "workerinput") else base
    return shared / FOLDER


def _name(config) -> str:
    return os.environ.get("PYTEST_XDIST_WORKER", "") or "main"


def _attach(config) -> None:
    """The handler on the root logger (again, where a test's logging set-up removed it)."""
    global _handler
    root = logging.getLogger()
    if _handler is not None and _handler in root.handlers:
        return
    if _handler is None:
        folder = _folder(config)
        if folder is None:
            return
        folder.mkdir(parents=True, exist_ok=True)
        _handler = logging.FileHandler(folder / f"{_name(config)}.jsonl", encoding="utf-8")
        _handler.addFilter(ContextFilter())
        _handler.setFormatter(JsonFormatter())
    root.addHandler(_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _attach(item.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    try:
        return (yield)
    finally:
        # Before teardown: the `settings` fixture still holds what this test configured.
        _seen.update(known_secrets())


def pytest_runtest_teardown(item):
    _seen.update(known_secrets())


def _problems(folder: Path) -> list[str]:
    secrets: set[str] = set()
    for path in folder.glob("*.secrets.json"):
        secrets.update(json.loads(path.read_text()))
    problems = []
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                try:
                    record = json.loads(line)
                except ValueError:
                    problems.append(f"{path.name}:{number} is not one JSON object: {line[:120]!r}")
                    continue
                if not isinstance(record, dict) or not {"time", "level", "logger"} <= set(record):
                    problems.append(f"{path.name}:{number} lacks time, level or logger")
                    continue
                for secret in secrets:
                    if secret in line:
                        problems.append(
                            f"{path.name}:{number} ({record['logger']}) holds a secret the "
                            f"tests used, starting {secret[:3]!r}"
                        )
    return problems


def pytest_sessionfinish(session):
    config = session.config
    folder = _folder(config)
    if folder is None:
        return
    if _handler is not None:
        logging.getLogger().removeHandler(_handler)
        _handler.close()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{_name(config)}.secrets.json").write_text(json.dumps(sorted(_seen | _extra)))
    if hasattr(config, "workerinput"):
        return  # the controller reads every worker's files once they are all done
    problems = _problems(folder)
    if problems:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.section("log lines", sep="=", red=True, bold=True)
            for problem in problems[:50]:
                reporter.line(problem, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
