"""One TLS context per process for every outgoing HTTPS client.

httpx builds a fresh `ssl.SSLContext` for each client it creates, which loads the whole CA
bundle again: about 30 ms of CPU per client, and the watcher and the rate fetcher open clients
on every pass. An SSLContext may be shared by any number of clients and threads, so they all
take this one, built once with httpx's own defaults (certifi's bundle, or `SSL_CERT_FILE` /
`SSL_CERT_DIR` when set).
"""

import functools
import ssl

import httpx


@functools.cache
def client_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()
