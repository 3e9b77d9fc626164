"""Log lines: the context filter (request id, account, order; secrets masked) and the
JSON formatter that KERNODECK_LOG_FORMAT=json selects (one object per line)."""

import json
import logging
import re
from datetime import UTC, datetime

from kernodeck.observability import logcontext

# Credentials that may sit in a message (a header, a URL's query, a DSN's password).
SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"(?i)((?:token|api[_-]?key|apikey|key|secret|password|passwd)=)[^&\s\"']+"),
    re.compile(r"(?i)(://[^:/@\s]+:)[^@\s]+(@)"),
)
MASK = "[redacted]"


def known_secrets() -> list[str]:
    """The configured secrets that must never be written out verbatim."""
    from django.conf import settings

    values = [
        getattr(settings, "SECRET_KEY", ""),
        getattr(settings, "KERNODECK_METRICS_TOKEN", ""),
        getattr(settings, "KERNODECK_COINGECKO_API_KEY", ""),
        getattr(settings, "KERNODECK_TRON_API_KEY", ""),
        getattr(settings, "EMAIL_HOST_PASSWORD", ""),
        *getattr(settings, "KERNODECK_FIELD_KEYS", []),
    ]
    return [value for value in values if value and len(value) >= 6]


def redact(text: str, secrets=None) -> str:
    for secret in known_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern in SECRET_PATTERNS:
        if pattern.groups == 2:
            text = pattern.sub(lambda m: f"{m.group(1)}{MASK}{m.group(2)}", text)
        else:
            text = pattern.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return text


class ContextFilter(logging.Filter):
    """Adds request_id, user_id, order and task to every record and masks secrets in its
    message and traceback. Installed on the handler, so it sees every logger's records."""

    def filter(self, record):
        record.request_id = getattr(record, "request_id", "") or logcontext.request_id()
        if getattr(record, "user_id", None) is None:
            record.user_id = logcontext.user_id()
        record.order = getattr(record, "order", "") or logcontext.order_reference()
        record.task = getattr(record, "task", "") or logcontext.task()
        try:
            message = record.getMessage()
        except Exception:
            return True  # a bad format: let logging report it as it always does
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, and the
    request id, user id, order reference and task where known; a traceback as `exc`."""

    def format(self, record):
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in ("request_id", "user_id", "order", "task"):
            value = getattr(record, field, None)
            if value not in (None, ""):
                line[field] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(self.formatException(record.exc_info))
        if record.exc_text:
            line["exc"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)
