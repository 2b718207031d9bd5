"""Resolver stand-ins: host names answered from a table, never from the network. `Hosts` for `make deploy`'s
preflight (infra/preflight.py), so a test says which peers have an IPv6 address and which do not; `Table` for
the settings' comparison of two URLs (chalicelib/sameness.py), so a test says which names share an address.

    python -m tests.support.resolver [infra.deploy arguments]   # make deploy, every host dual-stack
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Iterable, Mapping

from infra import deploy, preflight


class Hosts:
    """Every name dual-stack, but those given as IPv4-only (an A record alone) or unknown (no record at all)."""

    def __init__(self, ipv4_only: Iterable[str] = (), unknown: Iterable[str] = ()):
        self.ipv4_only, self.unknown = set(ipv4_only), set(unknown)
        self.asked: list[str] = []

    def __call__(self, host: str) -> preflight.Addresses:
        self.asked.append(host)
        if host in self.unknown:
            return preflight.Addresses(ipv4=False, ipv6=False)
        return preflight.Addresses(ipv4=True, ipv6=host not in self.ipv4_only)


class Table:
    """`chalicelib.sameness.resolve`'s stand-in: each name's addresses as given (a literal address is its own, a
    name not given has none); `asked` lists the names looked up."""

    def __init__(self, addresses: Mapping[str, Iterable[str]]):
        self.addresses = {name: frozenset(found) for name, found in addresses.items()}
        self.asked: list[str] = []

    def __call__(self, host: str, port: int, deadline: float) -> frozenset[str]:
        self.asked.append(host)
        try:
            return frozenset({str(ipaddress.ip_address(host))})
        except ValueError:
            return self.addresses.get(host, frozenset())


if __name__ == "__main__":
    preflight.resolve = Hosts()
    sys.exit(deploy.main(sys.argv[1:]))
