"""The run's log check (tests/logsecrets.py) finds a line that is not JSON and a line that
holds a secret the tests used, and passes a clean log."""

import json

from tests import logsecrets


def write(folder, lines, secrets):
    folder.mkdir()
    (folder / "gw0.jsonl").write_text("".join(line + "\n" for line in lines))
    (folder / "gw0.secrets.json").write_text(json.dumps(secrets))


def line(message, logger="kernodeck.test"):
    return json.dumps(
        {
            "time": "2026-01-01T00:00:00+00:00",
            "level": "INFO",
            "logger": logger,
            "message": message,
        }
    )


def test_a_clean_log_passes(tmp_path):
    write(tmp_path / "logs", [line("token=[redacted]"), line("paid")], ["metrics-token-0001"])
    assert logsecrets._problems(tmp_path / "logs") == []


def test_a_secret_or_a_line_that_is_not_json_fails_the_run(tmp_path):
    write(
        tmp_path / "logs",
        [line("ok"), line("scrape with metrics-token-0001", logger="kernodeck.web"), "plain text"],
        ["metrics-token-0001"],
    )
    assert logsecrets._problems(tmp_path / "logs") == [
        "gw0.jsonl:2 (kernodeck.web) holds a secret the tests used, starting 'met'",
        "gw0.jsonl:3 is not one JSON object: 'plain text\\n'",
    ]
