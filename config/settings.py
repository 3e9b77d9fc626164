"""Kernodeck settings, read from KERNODECK_* environment variables (see README)."""

import ipaddress
import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from kernodeck.core import defaults

BASE_DIR = Path(__file__).resolve().parent.parent
# State (SQLite files, the demo's keys): KERNODECK_VAR_DIR, else the checkout's var/ (or, for
# an installed package, var/ of the working directory): see kernodeck/core/defaults.py.
VAR_DIR = defaults.var_dir()


def env_bool(name, default=False):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be on or off (1/0, true/false), not {raw!r}.")


def env_list(name, default=""):
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_limit(name, default):
    """Parse a throttle limit written as "ATTEMPTS/SECONDS", e.g. "5/900"."""
    raw = os.environ.get(name, default)
    try:
        attempts, seconds = (int(part) for part in raw.split("/"))
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must look like ATTEMPTS/SECONDS (e.g. 5/900), not {raw!r}."
        ) from None
    if attempts < 1 or seconds < 1:
        raise ImproperlyConfigured(f"{name} needs positive numbers, not {raw!r}.")
    return attempts, seconds


def email_settings(url):
    """Map KERNODECK_EMAIL_URL (console:, smtp://, smtp+tls://, smtp+ssl://) to settings."""
    parts = urlsplit(url)
    if parts.scheme in {"console", ""}:
        return {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}
    if parts.scheme == "locmem":
        return {"EMAIL_BACKEND": "django.core.mail.backends.locmem.EmailBackend"}
    if parts.scheme not in {"smtp", "smtp+tls", "smtp+ssl"}:
        raise ImproperlyConfigured(
            "KERNODECK_EMAIL_URL must start with console:, smtp://, smtp+tls:// or smtp+ssl://."
        )
    query = parse_qs(parts.query)
    return {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": parts.hostname or "localhost",
        "EMAIL_PORT": parts.port or (465 if parts.scheme == "smtp+ssl" else 587),
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_TLS": parts.scheme == "smtp+tls",
        "EMAIL_USE_SSL": parts.scheme == "smtp+ssl",
        "DEFAULT_FROM_EMAIL": query.get("from", ["Kernodeck <noreply@localhost>"])[0],
    }


DEBUG = env_bool("KERNODECK_DEBUG")
KERNODECK_DEMO = env_bool("KERNODECK_DEMO")

SECRET_KEY = os.environ.get("KERNODECK_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "KERNODECK_SECRET_KEY is required when KERNODECK_DEBUG is off. "
            "Generate one with: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    SECRET_KEY = defaults.DEVELOPMENT_SECRET_KEY

ALLOWED_HOSTS = env_list("KERNODECK_ALLOWED_HOSTS", "localhost,127.0.0.1" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("KERNODECK_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    # Django's admin with the back-office site (403 instead of a login loop, permissions).
    "kernodeck.backoffice.sites.BackofficeAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "huey.contrib.djhuey",
    # django-ninja's API docs viewer from our own static files, never from a CDN.
    "ninja",
    "kernodeck.core",
    "kernodeck.accounts",
    "kernodeck.catalog",
    "kernodeck.orders",
    "kernodeck.payments",
    "kernodeck.ledger",
    "kernodeck.notifications",
    "kernodeck.provisioning",
    "kernodeck.support",
    "kernodeck.backoffice",
    "kernodeck.guides",
    "kernodeck.sizing",
    "kernodeck.demo",
    "kernodeck.api",
    "kernodeck.observability",
]

MIDDLEWARE = [
    # A request id for every log line of the request (echoed in X-Request-ID).
    "kernodeck.observability.middleware.RequestIdMiddleware",
    # Answers /healthz and /readyz before host checks and the HTTPS redirect.
    "kernodeck.core.health.HealthMiddleware",
    # /metrics (token or allowed addresses only), then requests counted by route and status.
    "kernodeck.observability.middleware.MetricsMiddleware",
    "kernodeck.observability.middleware.HttpMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # django-csp's, Django's locale and messages middlewares, cheaper per request
    # (core/stack.py).
    "kernodeck.core.stack.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A visitor without cookies gets a stored public page here, with the headers the rest
    # of the stack gave it and a CSRF cookie of their own (core/pagecache.py).
    "kernodeck.core.pagecache.StoredPageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "kernodeck.core.stack.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "kernodeck.core.stack.MessageMiddleware",
    # NUL bytes and oversized bodies are refused here, before any view (core/inputs.py).
    "kernodeck.core.middleware.InputGuardMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # An IntegrityError escaping a page's view (a lost race) is a 409 page, not a 500.
    "kernodeck.core.middleware.ConstraintConflictMiddleware",
    # Whole public pages for anonymous visitors, served before the view: last, so every
    # middleware above still runs on a stored copy (core/pagecache.py).
    "kernodeck.core.pagecache.PageCacheMiddleware",
]

# Request bodies: forms and JSON beyond this size answer 413 (file uploads not counted).
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("KERNODECK_MAX_BODY_BYTES", 1024 * 1024))
DATA_UPLOAD_MAX_NUMBER_FIELDS = 200
# The API's pages: at most 100 items, an offset that fits any database.
NINJA_PAGINATION_CLASS = "kernodeck.core.pagination.BoundedLimitOffsetPagination"
NINJA_PAGINATION_PER_PAGE = 50
NINJA_PAGINATION_MAX_LIMIT = 100

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "kernodeck" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
                "kernodeck.core.context_processors.site",
                "kernodeck.core.context_processors.csrf_placeholder",
            ],
        },
    },
]

# Database: SQLite under var/ unless KERNODECK_DATABASE_URL says otherwise.
DATABASE_URL = os.environ.get("KERNODECK_DATABASE_URL", f"sqlite:///{VAR_DIR / 'kernodeck.db'}")
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        # IMMEDIATE takes the write lock when a transaction starts, so two writers queue
        # instead of failing with "database is locked" when one upgrades a read lock.
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("KERNODECK_REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        "default": {
            # Django's Redis cache, reusing its client (core/redis_cache.py).
            "BACKEND": "kernodeck.core.redis_cache.RedisCache",
            "LOCATION": REDIS_URL,
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Task queue: huey on a SQLite file by default, on Redis when configured.
if REDIS_URL:
    HUEY = {"huey_class": "huey.RedisHuey", "name": "kernodeck", "url": REDIS_URL}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    HUEY = {
        "huey_class": "huey.SqliteHuey",
        "name": "kernodeck",
        "filename": str(VAR_DIR / "tasks.sqlite3"),
    }
HUEY["immediate"] = env_bool("KERNODECK_TASKS_IMMEDIATE")
# flush_locks: a lock a killed worker held (a watcher pass lock) is freed at start-up.
# Workers: each chain network's pass is a task of its own (up to 5, each bounded by
# KERNODECK_WATCH_PASS_DEADLINE), so that one hung chain API never holds the others' worker.
HUEY["consumer"] = {"workers": 6, "worker_type": "thread", "flush_locks": True}

# Accounts and authentication.
AUTH_USER_MODEL = "accounts.User"
# Permissions in one query per request (accounts/backends.py); ModelBackend signs in, loads
# the session's account and answers from the cache the first one filled.
AUTHENTICATION_BACKENDS = [
    "kernodeck.accounts.backends.OnePermissionQueryBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Sessions are database rows (the account page lists and ends them); with Redis, shared by
# every worker, a signed-in request reads its session from the cache instead of a query
# (accounts/cached_sessions.py says what keeps an ended session from signing in).
SESSION_ENGINE = (
    "kernodeck.accounts.cached_sessions" if REDIS_URL else "kernodeck.accounts.sessions"
)
SESSION_COOKIE_AGE = 60 * 60 * 24 * 14
LOGIN_URL = "accounts:signin"
LOGIN_REDIRECT_URL = "accounts:account"
LOGOUT_REDIRECT_URL = "home"
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "kernodeck.accounts.validators.PasswordLengthValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator",
        "OPTIONS": {"user_attributes": ("email", "first_name", "last_name")},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# Throttling: ATTEMPTS/SECONDS. KERNODECK_THROTTLE=off is for load tests and scripts only.
KERNODECK_THROTTLE = env_bool("KERNODECK_THROTTLE", default=True)
KERNODECK_THROTTLE_SIGNIN_ACCOUNT = env_limit("KERNODECK_THROTTLE_SIGNIN_ACCOUNT", "5/900")
KERNODECK_THROTTLE_SIGNIN_IP = env_limit("KERNODECK_THROTTLE_SIGNIN_IP", "20/900")
KERNODECK_THROTTLE_REGISTER_IP = env_limit("KERNODECK_THROTTLE_REGISTER_IP", "5/3600")
# The signed-out "I can't sign in" request: per address asked about, and per network.
KERNODECK_THROTTLE_ACCESS_EMAIL = env_limit("KERNODECK_THROTTLE_ACCESS_EMAIL", "3/86400")
KERNODECK_THROTTLE_ACCESS_IP = env_limit("KERNODECK_THROTTLE_ACCESS_IP", "10/3600")
# The single-use link staff e-mail after checking who asked: valid this long (seconds).
PASSWORD_RESET_TIMEOUT = 24 * 3600
# Per account: new payment instructions (orders and top-ups), and "I have paid".
KERNODECK_THROTTLE_PAYMENT_CREATE = env_limit("KERNODECK_THROTTLE_PAYMENT_CREATE", "10/3600")
KERNODECK_THROTTLE_PAYMENT_DECLARE = env_limit("KERNODECK_THROTTLE_PAYMENT_DECLARE", "10/3600")

# Orders: how long an unsettled order holds its units (seconds).
# Where people who cannot sign in (lost password) write to support; shown on the sign-in page.
KERNODECK_SUPPORT_EMAIL = os.environ.get("KERNODECK_SUPPORT_EMAIL", "").strip()
KERNODECK_ORDER_HOLD_SECONDS = int(os.environ.get("KERNODECK_ORDER_HOLD_SECONDS", 2 * 60 * 60))
# The catalog, the offers list and quotes read offers, prices and units free from a cache
# invalidated by every change; this bounds how late a lapsed hold shows (0: no cache).
KERNODECK_CATALOG_CACHE_SECONDS = int(os.environ.get("KERNODECK_CATALOG_CACHE_SECONDS", 5))
# Whole public pages for anonymous visitors, kept per process for at most this many seconds
# (those with catalog figures follow the catalog cache too; core/pagecache.py). 0: off,
# the default under KERNODECK_DEBUG so that an edited template shows at once.
KERNODECK_PAGE_CACHE_SECONDS = int(
    os.environ.get("KERNODECK_PAGE_CACHE_SECONDS", 0 if DEBUG else 60)
)
# Signed-in pages (the staff lists, the balance statement, an order file) kept per process
# while PostgreSQL's snapshot shows no transaction begun or ended since, for at most this
# many seconds: what a page derives from the clock alone shows at most that late
# (core/signedpages.py). 0: off, the default under KERNODECK_DEBUG.
KERNODECK_SIGNED_PAGE_SECONDS = int(
    os.environ.get("KERNODECK_SIGNED_PAGE_SECONDS", 0 if DEBUG else 5)
)

# Provisioning: keys that encrypt delivered secrets (first encrypts, all decrypt, so keys
# rotate), and the driver class behind each node driver code.
KERNODECK_FIELD_KEYS = env_list("KERNODECK_FIELD_KEYS")
if not KERNODECK_FIELD_KEYS and DEBUG:
    # Development only; `check --deploy` refuses a production set-up without real keys.
    KERNODECK_FIELD_KEYS = [defaults.DEVELOPMENT_FIELD_KEY]
KERNODECK_PROVISIONING_DRIVERS = {
    "manual": "kernodeck.provisioning.drivers.manual.ManualDriver",
    "ssh": "kernodeck.provisioning.drivers.ssh.SshDriver",
}
# The ssh driver: the operator's private key (a file, never the database), timeouts in
# seconds, and how many failed provisioning attempts make the desk propose a refund.
KERNODECK_SSH_KEY_FILE = os.environ.get("KERNODECK_SSH_KEY_FILE", "")
KERNODECK_SSH_CONNECT_TIMEOUT = int(os.environ.get("KERNODECK_SSH_CONNECT_TIMEOUT", 10))
KERNODECK_SSH_COMMAND_TIMEOUT = int(os.environ.get("KERNODECK_SSH_COMMAND_TIMEOUT", 120))
KERNODECK_SSH_PREPARE_TIMEOUT = int(os.environ.get("KERNODECK_SSH_PREPARE_TIMEOUT", 1800))
KERNODECK_PROVISIONING_MAX_ATTEMPTS = int(os.environ.get("KERNODECK_PROVISIONING_MAX_ATTEMPTS", 3))
# A release (end, refund) a node has not confirmed after this many minutes is an alert, and
# its node takes no new rental until it is confirmed.
KERNODECK_RELEASE_OVERDUE_MINUTES = int(os.environ.get("KERNODECK_RELEASE_OVERDUE_MINUTES", 10))
# GPU use the reconcile samples from each node's agent: at most one sample per GPU every
# this many seconds, each kept this many hours (the pages plot the last hour).
KERNODECK_GPU_SAMPLE_SECONDS = int(os.environ.get("KERNODECK_GPU_SAMPLE_SECONDS", 60))
KERNODECK_GPU_SAMPLE_RETENTION_HOURS = int(
    os.environ.get("KERNODECK_GPU_SAMPLE_RETENTION_HOURS", 24)
)


def parse_admins(text: str) -> list[tuple[str, str]]:
    """`KERNODECK_ADMINS`: "Name <addr>, Other <addr2>" (or bare addresses) -> ADMINS."""
    from email.utils import getaddresses

    pairs = []
    for name, address in getaddresses([text or ""]):
        if "@" in address:
            pairs.append((name or address, address))
    return pairs


ADMINS = parse_admins(os.environ.get("KERNODECK_ADMINS", ""))
# Alerts may also be posted to a chat or paging tool, signed with HMAC-SHA256 of the body
# (header X-Kernodeck-Signature: sha256=<hex>).
KERNODECK_ALERT_WEBHOOK_URL = os.environ.get("KERNODECK_ALERT_WEBHOOK_URL", "")
KERNODECK_ALERT_WEBHOOK_SECRET = os.environ.get("KERNODECK_ALERT_WEBHOOK_SECRET", "")

# Payments: exchange rates, watch-only wallets, instructions.
KERNODECK_RATE_MAX_AGE = int(os.environ.get("KERNODECK_RATE_MAX_AGE", 300))
KERNODECK_RATE_PROVIDERS = env_list("KERNODECK_RATE_PROVIDERS", "kraken,coingecko")
KERNODECK_KRAKEN_URL = os.environ.get("KERNODECK_KRAKEN_URL", "https://api.kraken.com")
KERNODECK_COINGECKO_URL = os.environ.get(
    "KERNODECK_COINGECKO_URL", "https://api.coingecko.com/api/v3"
)
KERNODECK_COINGECKO_API_KEY = os.environ.get("KERNODECK_COINGECKO_API_KEY", "")
KERNODECK_HTTP_TIMEOUT = float(os.environ.get("KERNODECK_HTTP_TIMEOUT", 10))
KERNODECK_CHAIN_MODE = os.environ.get("KERNODECK_CHAIN_MODE", "mainnet")
if KERNODECK_CHAIN_MODE not in {"mainnet", "testnet", "regtest"}:
    raise ImproperlyConfigured("KERNODECK_CHAIN_MODE must be mainnet, testnet or regtest.")
# regtest only: the EIP-155 chain id of the operator's EVM dev chain (default 1337: ganache,
# geth --dev; Hardhat and Anvil use 31337). Mainnet (1) and testnet (Sepolia) are fixed.
KERNODECK_ETHEREUM_CHAIN_ID = os.environ.get("KERNODECK_ETHEREUM_CHAIN_ID", "").strip()
if KERNODECK_ETHEREUM_CHAIN_ID and KERNODECK_CHAIN_MODE != "regtest":
    raise ImproperlyConfigured("KERNODECK_ETHEREUM_CHAIN_ID is for KERNODECK_CHAIN_MODE=regtest.")
if KERNODECK_ETHEREUM_CHAIN_ID and not KERNODECK_ETHEREUM_CHAIN_ID.isdigit():
    raise ImproperlyConfigured("KERNODECK_ETHEREUM_CHAIN_ID must be a positive integer.")
KERNODECK_ETHEREUM_CHAIN_ID = int(KERNODECK_ETHEREUM_CHAIN_ID or 0)
# regtest only: the USDT and USDC contracts on that dev chain (0x addresses; default: the
# mainnet addresses, where rehearsals place their tokens). Checked by payments.checks.
KERNODECK_ETHEREUM_USDT_CONTRACT = os.environ.get("KERNODECK_ETHEREUM_USDT_CONTRACT", "").strip()
KERNODECK_ETHEREUM_USDC_CONTRACT = os.environ.get("KERNODECK_ETHEREUM_USDC_CONTRACT", "").strip()
KERNODECK_XPUBS = {
    chain: os.environ.get(f"KERNODECK_XPUB_{chain.upper()}", "").strip()
    for chain in ("bitcoin", "litecoin", "ethereum", "tron")
}
KERNODECK_SOLANA_RECIPIENT = os.environ.get("KERNODECK_SOLANA_RECIPIENT", "").strip()
# Chain APIs the watchers poll. Empty disables a network's watcher. Defaults: public
# endpoints in production, none in demo mode (the demo runs without internet).
_TESTNET = KERNODECK_CHAIN_MODE == "testnet"
_CHAIN_DEFAULTS = {
    "KERNODECK_BITCOIN_ESPLORA_URL": (
        "https://blockstream.info/testnet/api" if _TESTNET else "https://blockstream.info/api"
    ),
    "KERNODECK_LITECOIN_ESPLORA_URL": (
        "https://litecoinspace.org/testnet/api" if _TESTNET else "https://litecoinspace.org/api"
    ),
    "KERNODECK_ETHEREUM_RPC_URL": (
        "https://ethereum-sepolia-rpc.publicnode.com"
        if _TESTNET
        else "https://ethereum-rpc.publicnode.com"
    ),
    "KERNODECK_TRON_API_URL": (
        "https://nile.trongrid.io" if _TESTNET else "https://api.trongrid.io"
    ),
    "KERNODECK_SOLANA_RPC_URL": (
        "https://api.devnet.solana.com" if _TESTNET else "https://api.mainnet-beta.solana.com"
    ),
}


def _chain_url(name):
    # regtest (rehearsals against the operator's own nodes) has no public endpoint.
    default = "" if KERNODECK_DEMO or KERNODECK_CHAIN_MODE == "regtest" else _CHAIN_DEFAULTS[name]
    return os.environ.get(name, default).strip()


KERNODECK_BITCOIN_ESPLORA_URL = _chain_url("KERNODECK_BITCOIN_ESPLORA_URL")
KERNODECK_LITECOIN_ESPLORA_URL = _chain_url("KERNODECK_LITECOIN_ESPLORA_URL")
KERNODECK_ETHEREUM_RPC_URL = _chain_url("KERNODECK_ETHEREUM_RPC_URL")
KERNODECK_TRON_API_URL = _chain_url("KERNODECK_TRON_API_URL")
KERNODECK_SOLANA_RPC_URL = _chain_url("KERNODECK_SOLANA_RPC_URL")
KERNODECK_TRON_API_KEY = os.environ.get("KERNODECK_TRON_API_KEY", "")
# The operator's own Bitcoin Core / Litecoin Core node (JSON-RPC), watched instead of
# Esplora when set: http://user:password@127.0.0.1:8332/, or the URL without credentials
# and the node's cookie file (e.g. ~/.bitcoin/.cookie) in KERNODECK_*_RPC_COOKIE_FILE.
# Esplora: the server's genesis block must be the configured chain's (asked once per process).
KERNODECK_ESPLORA_GENESIS_CHECK = env_bool("KERNODECK_ESPLORA_GENESIS_CHECK", True)
KERNODECK_BITCOIN_RPC_URL = os.environ.get("KERNODECK_BITCOIN_RPC_URL", "").strip()
KERNODECK_BITCOIN_RPC_COOKIE_FILE = os.environ.get("KERNODECK_BITCOIN_RPC_COOKIE_FILE", "")
KERNODECK_LITECOIN_RPC_URL = os.environ.get("KERNODECK_LITECOIN_RPC_URL", "").strip()
KERNODECK_LITECOIN_RPC_COOKIE_FILE = os.environ.get("KERNODECK_LITECOIN_RPC_COOKIE_FILE", "")
# The demo's chain simulator (kernodeck/demo/simulator/): its control API, used by the
# demo-only payment panel. Read in demo mode only; `kernodeck demo` sets it.
KERNODECK_DEMO_SIMULATOR_URL = (
    os.environ.get("KERNODECK_DEMO_SIMULATOR_URL", "").strip().rstrip("/")
    if KERNODECK_DEMO
    else ""
)
KERNODECK_WATCH_INTERVAL = int(os.environ.get("KERNODECK_WATCH_INTERVAL", 30))
# What the watcher calls with a confirmed payment (inside its transaction, the intent
# locked): the settlement step, which settles the order, applies the extension or credits
# the top-up. A dotted path, as Django's backends, so the payments domain never imports it.
KERNODECK_PAYMENT_ALLOCATOR = "kernodeck.settlement.allocation.payment_allocate"
# What follows money that left the chain after settlement (flag, alert: the review queue).
KERNODECK_PAYMENT_REVERSER = "kernodeck.settlement.reversal.payment_reversed"
# Concurrent HTTP requests of one network's address-by-address polling.
KERNODECK_WATCH_CONCURRENCY = int(os.environ.get("KERNODECK_WATCH_CONCURRENCY", 8))
# Seconds between polls of the intents kept only for late payments (expired, under review).
KERNODECK_WATCH_LATE_INTERVAL = int(os.environ.get("KERNODECK_WATCH_LATE_INTERVAL", 300))
# Addresses a polling pass of Bitcoin, Litecoin or Tron polls (one request or two each):
# those every pass needs (near their expiry, paid, asked to be looked at again) and open
# ones in turn up to this many (docs/architecture.md, "Address polling in turns"). 0: every
# open instruction on every pass.
KERNODECK_WATCH_POLL_BUDGET = int(os.environ.get("KERNODECK_WATCH_POLL_BUDGET", 1000))
# Bitcoin and Litecoin: scan new blocks (and new mempool transactions) for our addresses
# instead of polling every address on every pass (docs/architecture.md, "Block scanning").
KERNODECK_WATCH_BLOCK_SCAN = env_bool("KERNODECK_WATCH_BLOCK_SCAN", True)
# Tron's block scan (docs/architecture.md, "Block scanning"): blocks per
# getblockbylimitnext request (the node answers at most 100), blocks read per pass at most
# (more behind: every address is polled instead where that costs fewer requests, else this
# many are read a pass), and watched addresses whose TronGrid lists each block pass also
# reads, oldest first (what a block does not show: tokens moved by another contract).
KERNODECK_TRON_BLOCKS_PER_CALL = int(os.environ.get("KERNODECK_TRON_BLOCKS_PER_CALL", 100))
KERNODECK_TRON_SCAN_MAX_BLOCKS = int(os.environ.get("KERNODECK_TRON_SCAN_MAX_BLOCKS", 600))
KERNODECK_TRON_SWEEP_ADDRESSES = int(os.environ.get("KERNODECK_TRON_SWEEP_ADDRESSES", 20))
if not 1 <= KERNODECK_TRON_BLOCKS_PER_CALL <= 100 or KERNODECK_TRON_SCAN_MAX_BLOCKS < 1:
    raise ImproperlyConfigured(
        "KERNODECK_TRON_BLOCKS_PER_CALL must be 1 to 100; "
        "KERNODECK_TRON_SCAN_MAX_BLOCKS must be at least 1."
    )
if KERNODECK_TRON_SWEEP_ADDRESSES < 0:
    raise ImproperlyConfigured("KERNODECK_TRON_SWEEP_ADDRESSES must not be negative.")
# Seconds one network's pass may spend asking its chain API, all requests together: a slow
# or hung API fails its own pass then, and each network is watched on its own.
KERNODECK_WATCH_PASS_DEADLINE = float(os.environ.get("KERNODECK_WATCH_PASS_DEADLINE", 120))
if KERNODECK_WATCH_PASS_DEADLINE <= 0:
    raise ImproperlyConfigured("KERNODECK_WATCH_PASS_DEADLINE must be a positive number.")
if (
    KERNODECK_WATCH_CONCURRENCY < 1
    or KERNODECK_WATCH_LATE_INTERVAL < 0
    or KERNODECK_WATCH_POLL_BUDGET < 0
):
    raise ImproperlyConfigured(
        "KERNODECK_WATCH_CONCURRENCY must be at least 1; "
        "KERNODECK_WATCH_LATE_INTERVAL and KERNODECK_WATCH_POLL_BUDGET must not be negative."
    )
KERNODECK_PAYMENT_EXPIRY_SECONDS = int(os.environ.get("KERNODECK_PAYMENT_EXPIRY_SECONDS", 1800))
KERNODECK_MONITOR_SECONDS = int(os.environ.get("KERNODECK_MONITOR_SECONDS", 24 * 60 * 60))
# Caps on what the chain watchers must follow: instructions still watched per order or
# top-up (abandoned and expired ones included), and top-ups awaiting payment per account.
KERNODECK_MAX_WATCHED_INSTRUCTIONS = int(os.environ.get("KERNODECK_MAX_WATCHED_INSTRUCTIONS", 5))
KERNODECK_MAX_OPEN_TOPUPS = int(os.environ.get("KERNODECK_MAX_OPEN_TOPUPS", 3))
if KERNODECK_MAX_WATCHED_INSTRUCTIONS < 1 or KERNODECK_MAX_OPEN_TOPUPS < 1:
    raise ImproperlyConfigured(
        "KERNODECK_MAX_WATCHED_INSTRUCTIONS and KERNODECK_MAX_OPEN_TOPUPS must be at least 1."
    )

# Internationalisation: Spanish and English, chosen by the browser or the footer switch.
LANGUAGE_CODE = "en"
LANGUAGES = [("es", "Español"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "kernodeck" / "locale"]
USE_I18N = True
TIME_ZONE = "UTC"
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "kernodeck" / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Serve straight from the apps' static folders, so no collectstatic step is needed.
WHITENOISE_USE_FINDERS = True

globals().update(email_settings(os.environ.get("KERNODECK_EMAIL_URL", "console:")))
DEFAULT_FROM_EMAIL = globals().get("DEFAULT_FROM_EMAIL", "Kernodeck <noreply@localhost>")
# Operator alerts (mail_admins) come from the same sender, named as ours, not Django's.
SERVER_EMAIL = DEFAULT_FROM_EMAIL
EMAIL_SUBJECT_PREFIX = "[Kernodeck] "
# The site's public address, for links in e-mails (no trailing slash).
KERNODECK_SITE_URL = os.environ.get("KERNODECK_SITE_URL", "http://127.0.0.1:8000").rstrip("/")
if urlsplit(KERNODECK_SITE_URL).scheme not in {"http", "https"}:
    raise ImproperlyConfigured("KERNODECK_SITE_URL must be an http:// or https:// address.")

# HTTPS: on in production (behind a TLS proxy that sets X-Forwarded-Proto), off for
# DEBUG and for the local demo, which serves plain http://127.0.0.1:8000.
KERNODECK_HTTPS = env_bool("KERNODECK_HTTPS", default=not DEBUG)
# Production with HTTPS off must say why (e.g. a private network only); `check --deploy`
# refuses HTTPS off without it (kernodeck/core/checks.py).
KERNODECK_HTTPS_OFF_REASON = os.environ.get("KERNODECK_HTTPS_OFF_REASON", "").strip()
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
if KERNODECK_HTTPS:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    LANGUAGE_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = int(os.environ.get("KERNODECK_HSTS_SECONDS", 60 * 60 * 24 * 365))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("KERNODECK_HSTS_PRELOAD", default=True)

# Content-Security-Policy (django-csp): scripts, styles and everything else from this site
# only; no inline script or style, no eval. htmx is a static file and its config a <meta>.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

# Observability: /metrics for Prometheus, closed unless a token or addresses are set
# (README, "Metrics, dashboard and logs").
KERNODECK_METRICS_TOKEN = os.environ.get("KERNODECK_METRICS_TOKEN", "").strip()
if KERNODECK_METRICS_TOKEN and len(KERNODECK_METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("KERNODECK_METRICS_TOKEN must be at least 16 characters.")
KERNODECK_METRICS_ALLOW = env_list("KERNODECK_METRICS_ALLOW")
try:
    KERNODECK_METRICS_ALLOW_NETWORKS = tuple(
        ipaddress.ip_network(item, strict=False) for item in KERNODECK_METRICS_ALLOW
    )
except ValueError as exc:
    raise ImproperlyConfigured(
        f"KERNODECK_METRICS_ALLOW must list IP addresses or networks (10.0.0.5,10.1.0.0/16): {exc}"
    ) from None
# Log lines: "text" (the default) or "json" (one object per line, with the request id).
KERNODECK_LOG_FORMAT = os.environ.get("KERNODECK_LOG_FORMAT", "text").strip().lower() or "text"
if KERNODECK_LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured("KERNODECK_LOG_FORMAT must be text or json.")

_JSON_LOGS = KERNODECK_LOG_FORMAT == "json"
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "kernodeck.observability.logformat.ContextFilter"}},
    "formatters": {"json": {"()": "kernodeck.observability.logformat.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["context"],
            **({"formatter": "json"} if _JSON_LOGS else {}),
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("KERNODECK_LOG_LEVEL", "INFO")},
    "loggers": {
        # The huey consumer installs its own handler unless the logger has one: in text
        # mode it keeps its own (not printed twice); in JSON mode it writes through ours.
        "huey": {
            "propagate": False,
            **({"handlers": ["console"]} if KERNODECK_LOG_FORMAT == "json" else {}),
        },
        # httpx logs full URLs at INFO, and RPC URLs may carry API keys.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # paramiko narrates every SSH handshake at INFO; the ssh driver logs what matters.
        "paramiko": {"level": "WARNING"},
    },
}
