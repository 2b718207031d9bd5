"""`bridge-check` says what is wrong with the way to the bridge in the words of its fix: TLS either way round, a
certificate the engine will never trust, a redirect the engine will never follow (review item 7), and plain
http:// to a public address, which lets anyone on the path rewrite the answers the engine trusts (item 3)."""

from __future__ import annotations

import datetime as dt
import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from chalicelib.events import bridge_check
from chalicelib.events.bridge_check import Options
from tests.support.kits import event_bridge, serving

KEY = "bridge-check-transport-key"


def checked(url: str) -> bridge_check.Report:
    return bridge_check.run(Options(url, KEY))


def only_failure(report: bridge_check.Report) -> str:
    """The one failing case's words, every case after it not run (each would fail on the same thing)."""
    [first, *rest] = report.cases
    assert first.verdict == "FAIL", first
    assert {c.verdict for c in rest} == {"SKIP"} and all(c.said.startswith("not run: ") for c in rest), rest
    return first.said


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no public CA signed, and its key."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, "game bridge")])
    now = dt.datetime.now(dt.UTC)
    import ipaddress

    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@contextmanager
def serving_tls(folder: Path) -> Iterator[int]:
    """The Python kit behind a self-signed certificate, on a free loopback port."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed(folder))
    server = event_bridge.make_server(event_bridge.Bridge(KEY), "127.0.0.1", 0)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_an_https_url_to_a_server_that_speaks_plain_http_is_told_so_not_that_nothing_answered():
    with serving(event_bridge.Bridge(KEY)) as url:
        said = only_failure(checked(url.replace("http://", "https://")))
    assert said.startswith(f"the server at {url.replace('http://', 'https://')} speaks plain HTTP, not TLS (")
    assert said.endswith("use http://, or serve TLS there") and "is the bridge running" not in said


def test_a_self_signed_certificate_is_told_the_engine_will_never_trust_it(tmp_path):
    with serving_tls(tmp_path) as port:
        said = only_failure(checked(f"https://127.0.0.1:{port}"))
    assert said.startswith("the engine does not trust the bridge's TLS certificate (")
    assert "serve one a public CA signed" in said and "is the bridge running" not in said


def test_an_http_url_to_a_server_that_speaks_tls_is_told_so_not_that_the_deadline_passed(tmp_path):
    with serving_tls(tmp_path) as port:
        said = only_failure(checked(f"http://127.0.0.1:{port}"))
    assert "deadline" not in said
    assert said.endswith("a server that speaks TLS does that to plain HTTP, so if it serves TLS use https://"), said


class _Redirecting(http.server.BaseHTTPRequestHandler):
    """A load balancer's default: every request sent to https."""

    def do_POST(self) -> None:
        self.send_response(301)
        self.send_header("Location", f"https://bridge.example.org{self.path}")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


def test_a_redirect_is_told_once_with_where_it_goes_and_that_the_engine_follows_none():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Redirecting)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        said = only_failure(checked(f"http://127.0.0.1:{server.server_address[1]}"))
    finally:
        server.shutdown()
        server.server_close()
    assert said == ("the bridge redirects (HTTP 301) to https://bridge.example.org/actions/test.noop: set"
                    " GAME_BRIDGE_URL to the base URL it names (https:// when it redirects there); the engine"
                    " follows no redirect")


@pytest.mark.parametrize("url", ["https://bridge.example.org", "http://127.0.0.1:8081", "http://localhost:8081",
                                 "http://10.0.4.7:8081", "http://192.168.1.20", "http://[::1]:8081", "http://[fd00::5]"])
def test_https_and_loopback_or_private_http_get_no_warning(url):
    assert [n for n in bridge_check.notes(bridge_check.Checker(Options(url, KEY))) if "http://" in n] == []


@pytest.mark.parametrize(("url", "where"), [("http://34.120.1.5:8081", "34.120.1.5, a public address"),
                                            ("HTTP://Bridge.Example.org/game", "bridge.example.org, a name taken as public")])
def test_plain_http_to_a_public_host_is_warned_about_with_the_fix(url, where):
    [warned] = [n for n in bridge_check.notes(bridge_check.Checker(Options(url, KEY))) if "http://" in n]
    assert warned.startswith(f"WARN {url} is plain http:// to {where}")
    assert "anyone on the path could rewrite them" in warned
    assert "serve the bridge over HTTPS with a publicly trusted certificate" in warned and "EVENT_MODULE_ACTIONS" in warned
