"""Facts about the incoming HTTP request that several domains need."""

import ipaddress


def client_ip(request) -> str:
    """The client's address as the web server saw it.

    Behind a reverse proxy, configure the proxy to set REMOTE_ADDR (e.g. uWSGI/gunicorn
    with the proxy protocol, or nginx's real_ip module); we never trust X-Forwarded-For
    ourselves, since a client can forge it to dodge throttling.
    """
    return request.META.get("REMOTE_ADDR") or "unknown"


def valid_ip(value) -> str | None:
    """`value` if it is an IP address, else None: address columns take no "unknown" (a
    request through a Unix socket has no REMOTE_ADDR)."""
    try:
        return str(ipaddress.ip_address(value)) if value else None
    except ValueError:
        return None
