"""Whether two settings name the same place or the same key, however each is spelled (the sandbox is never the bridge).

Invariant: two URLs are the same peer when their normalised forms agree — the scheme and the host without
case (a host's trailing dot and an IPv4-mapped IPv6 address dropped), the port with its scheme's default
filled in, the path with its dot segments removed, percent-escapes of unreserved characters decoded,
repeated slashes and a trailing one dropped, compared without case, and the query as written — and, where
only the host names differ, when the names share an address (`localhost` and `127.0.0.1`), looked up
under one deadline of RESOLVE_SECONDS for both, so start-up never hangs on a resolver (a name not resolved
in time is compared by its text). Two secret references are the same key when they name the same secret
(its ARN compared without case; a partial ARN, without Secrets Manager's six-character suffix, is the full
one's; a bare name is any ARN's of that name) and the same key of its JSON (or both the whole secret).
"""

from __future__ import annotations

import ipaddress
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

RESOLVE_SECONDS = 2.0  # both lookups together: a resolver that hangs delays start-up by this much at most
DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED_ESCAPE = re.compile(r"%(2[dDeE]|5[fF]|7[eE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA])")
_SECRETS_MANAGER_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}")
SECRET_ARN_PARTS = 7  # arn:<partition>:secretsmanager:<region>:<account>:secret:<name>


@dataclass(frozen=True)
class _Peer:
    scheme: str
    host: str
    port: int
    path: str
    query: str


def _host(raw: str) -> str:
    host = raw.lower().rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:
            return host.encode("idna").decode("ascii") if not host.isascii() else host
        except UnicodeError:
            return host
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped or address)


def _path(raw: str) -> str:
    """RFC 3986's remove_dot_segments on the unreserved-decoded path, repeated and trailing slashes dropped."""
    decoded = _UNRESERVED_ESCAPE.sub(lambda escape: unquote(escape.group(0)), raw)
    kept: list[str] = []
    for segment in decoded.split("/"):
        # guard: a-sandbox-path-is-compared-with-its-dot-segments
        if segment in ("", "."):
            continue
        if segment == "..":
            if kept:
                kept.pop()
            continue
        kept.append(segment)
    return "/" + "/".join(kept).casefold()


def _peer(url: str) -> _Peer | None:
    try:
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        # guard: a-sandbox-port-is-compared-without-its-default
        port = parts.port or DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return _Peer(scheme, _host(parts.hostname), port, _path(parts.path), parts.query)


def resolved(host: str, port: int, deadline: float) -> frozenset[str]:
    """The addresses of `host` (IPv4-mapped ones as IPv4), or none when it cannot be looked up before `deadline`."""
    from . import outbound  # only a process whose settings need a lookup pays for the import

    try:
        found = outbound.addresses(host, port, timeout=deadline - time.monotonic())
    except (OSError, ValueError):  # no such name, or the time is up (TimeoutError is an OSError)
        return frozenset()
    return frozenset(_host(address.split("%")[0]) for address in found)


resolve: Callable[[str, int, float], frozenset[str]] = resolved  # tests answer from a table (tests/support/resolver.py)


def same_url(one: str, other: str) -> bool:
    """Whether `one` and `other` reach the same peer (see above); URLs that do not parse are compared as text."""
    a, b = _peer(one), _peer(other)
    if a is None or b is None:
        return one.strip().rstrip("/") == other.strip().rstrip("/")
    if a == b:
        return True
    if (a.scheme, a.port, a.path, a.query) != (b.scheme, b.port, b.path, b.query):
        return False
    deadline = time.monotonic() + RESOLVE_SECONDS
    # guard: a-sandbox-host-is-compared-by-its-name-alone
    return bool(resolve(a.host, a.port, deadline) & resolve(b.host, b.port, deadline))


def _secret(arn: str) -> tuple[tuple[str, ...] | None, str]:
    """(partition, service, region, account), or None for a bare name; and the secret's name, both without case."""
    parts = arn.strip().split(":")
    if parts[0] != "arn" or len(parts) != SECRET_ARN_PARTS:
        return None, arn.strip().casefold()
    return tuple(part.casefold() for part in parts[1:5]), parts[6].casefold()


def same_secret_key(one: tuple[str, str | None], other: tuple[str, str | None]) -> bool:
    """Whether two secret references, each (the secret, the key of its JSON or None) as `config.secret_reference`
    reads a `*_SECRET_ARN` setting, name the same key (see above)."""
    (where, name), (other_where, other_name) = _secret(one[0]), _secret(other[0])
    if one[1] != other[1] or (where is not None and other_where is not None and where != other_where):
        return False
    # guard: a-partial-secret-arn-is-another-secret
    return name == other_name or any(
        full.startswith(partial) and _SECRETS_MANAGER_SUFFIX.fullmatch(full[len(partial):]) is not None
        for full, partial in ((name, other_name), (other_name, name)))
