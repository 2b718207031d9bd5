"""Whether a bridge URL sends the game's traffic in the clear where others can read and rewrite it.

Invariant: a URL is said to be in the clear only when it is http:// and its
host is not a loopback or private address (an IP literal in those ranges, or
`localhost`): the engine signs its requests but trusts the bridge's answers
unsigned, and an answer's revert is a command the engine later signs and sends
itself, so on an open network only TLS keeps them the game's. A name is taken
as public (whether it resolves only inside a private network cannot be known
from here), and the words say so. `bridge-check` and `make preflight` both ask
this one function.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def in_the_clear(url: str) -> str | None:
    """Why `url` should be https://, or None when it is, or reaches only this machine or a private network."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower()
    if parts.scheme.lower() != "http" or not host:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if host == "localhost" or host.endswith(".localhost"):
            return None
        where = f"{host}, a name taken as public (if it resolves only inside a private network, this does not apply)"
    else:
        if address.is_loopback or address.is_private or address.is_link_local:
            return None
        where = f"{host}, a public address"
    return (f"plain http:// to {where}: the engine signs its requests but trusts the bridge's answers as they come, and"
            " an answer's revert is a command it later signs and sends itself, so anyone on the path could rewrite"
            " them and read the players' names in the params: serve the bridge over HTTPS with a publicly trusted"
            " certificate (http only on loopback or a private network), and declare EVENT_MODULE_ACTIONS so that an"
            " answer can name only your actions")
