"""Which adapter watches which network, built from settings (base URLs)."""

from urllib.parse import urlsplit

from django.conf import settings

from kernodeck.payments import methods, registry
from kernodeck.payments.chains.core_rpc import CoreRpcAdapter
from kernodeck.payments.chains.esplora import EsploraAdapter
from kernodeck.payments.chains.ethereum import EthereumAdapter
from kernodeck.payments.chains.solana import SolanaAdapter
from kernodeck.payments.chains.tron import TronAdapter
from kernodeck.payments.models import PaymentMethod

NETWORKS = ("bitcoin", "litecoin", "ethereum", "tron", "solana")


def core_rpc_url(network: str) -> str:
    """The operator's own Bitcoin Core / Litecoin Core node, chosen over Esplora when set."""
    return {
        "bitcoin": settings.KERNODECK_BITCOIN_RPC_URL,
        "litecoin": settings.KERNODECK_LITECOIN_RPC_URL,
    }.get(network, "")


def api_url(network: str) -> str:
    return (
        core_rpc_url(network)
        or {
            "bitcoin": settings.KERNODECK_BITCOIN_ESPLORA_URL,
            "litecoin": settings.KERNODECK_LITECOIN_ESPLORA_URL,
            "ethereum": settings.KERNODECK_ETHEREUM_RPC_URL,
            "tron": settings.KERNODECK_TRON_API_URL,
            "solana": settings.KERNODECK_SOLANA_RPC_URL,
        }[network]
    )


def api_url_shown(network: str) -> str:
    """The network's API URL for people to read: no query, no user info, and path
    segments long enough to be API keys (Infura's /v3/<key>) replaced by "…"."""
    parts = urlsplit(api_url(network))
    if not parts.scheme:
        return ""
    path = "/".join("…" if len(segment) >= 24 else segment for segment in parts.path.split("/"))
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{path}"


def configured_networks() -> list[str]:
    """Networks with an API URL: only these are watched (and health-checked)."""
    return [network for network in NETWORKS if api_url(network)]


def adapter_for(network: str):
    """The adapter for `network`, or None when no API URL is configured for it."""
    url = api_url(network)
    if not url:
        return None
    timeout = settings.KERNODECK_HTTP_TIMEOUT
    if core_rpc_url(network):
        return CoreRpcAdapter(
            network,
            url,
            chain_mode=settings.KERNODECK_CHAIN_MODE,
            cookie_file=getattr(settings, f"KERNODECK_{network.upper()}_RPC_COOKIE_FILE"),
            timeout=timeout,
        )
    if network in {"bitcoin", "litecoin"}:
        return EsploraAdapter(
            network,
            url,
            timeout=timeout,
            concurrency=settings.KERNODECK_WATCH_CONCURRENCY,
            # The server's genesis block must be the configured chain's (not the demo's
            # simulator, which is no chain).
            chain_mode=None
            if settings.KERNODECK_DEMO or not settings.KERNODECK_ESPLORA_GENESIS_CHECK
            else settings.KERNODECK_CHAIN_MODE,
        )
    if network == "ethereum":
        contracts = {
            spec.asset: registry.token_contract(spec.code)
            for spec in methods.METHODS
            if spec.chain == "ethereum" and spec.token_contract
        }
        # Rescan deep enough that every transfer reaches its required confirmations.
        depth = max(
            PaymentMethod.objects.filter(chain="ethereum").values_list("confirmations", flat=True),
            default=12,
        )
        return EthereumAdapter(
            url,
            token_contracts={asset: c for asset, c in contracts.items() if c},
            timeout=timeout,
            rescan_depth=depth + 2,
            # The node must be on the configured chain, and its `finalized` block at
            # least the methods' confirmations below its head to be believed.
            chain_id=registry.ethereum_chain_id(),
            final_depth=depth,
        )
    if network == "tron":
        contract = registry.token_contract("usdt-tron")
        options = {"usdt_contract": contract} if contract else {}
        return TronAdapter(
            url,
            api_key=settings.KERNODECK_TRON_API_KEY,
            timeout=timeout,
            concurrency=settings.KERNODECK_WATCH_CONCURRENCY,
            blocks_per_call=settings.KERNODECK_TRON_BLOCKS_PER_CALL,
            max_blocks=settings.KERNODECK_TRON_SCAN_MAX_BLOCKS,
            **options,
        )

    return SolanaAdapter(url, timeout=timeout)
