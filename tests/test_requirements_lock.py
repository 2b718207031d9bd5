"""What the Lambda zip ships is locked: requirements.lock pins every package requirements.txt pulls in, at
requirements.txt's own versions, each with the hashes of its files; the package carries exactly that."""

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from infra.package import LOCK, canonical_name, locked, shipped
from tests.support import cfn

ROOT = Path(__file__).resolve().parent.parent


def _requirements() -> list[Requirement]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    return [Requirement(line.split("#")[0]) for line in lines if line.split("#")[0].strip()]


def _entries() -> list[str]:
    """The lock's requirements, each with its continuation lines joined and its comments dropped."""
    text = re.sub(r"\s*#.*$", "", LOCK.read_text(), flags=re.MULTILINE)
    return [" ".join(entry.split()) for entry in text.replace("\\\n", " ").splitlines() if entry.strip()]


def test_the_lock_pins_requirements_txt_at_its_own_versions():
    pins = locked()
    wanted = {canonical_name(r.name): str(r.specifier).removeprefix("==") for r in _requirements()}
    assert all(str(r.specifier).startswith("==") for r in _requirements()), "requirements.txt pins each package (==)"
    assert {name: pins.get(name) for name in wanted} == wanted


def test_every_locked_package_has_one_version_and_the_hashes_of_its_files():
    entries = _entries()
    unlocked = [e for e in entries if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*==\S+( --hash=sha256:[0-9a-f]{64})+", e)]
    assert len(entries) == len(locked()) > len(_requirements())
    assert unlocked == []


def test_the_lock_holds_everything_its_packages_need():
    """Read from this venv's metadata, for each locked package installed here at its locked version."""
    pins = locked()
    extras: dict[str, set[str]] = {canonical_name(r.name): set(r.extras) for r in _requirements()}
    missing = []
    for name, version in pins.items():
        try:
            installed = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if installed.version != version:
            continue
        asked = extras.get(name, set()) | {""}
        for needed in map(Requirement, installed.requires or []):
            applies = needed.marker is None or any(needed.marker.evaluate({"extra": extra}) for extra in asked)
            if applies and canonical_name(needed.name) not in pins:
                missing.append(f"{name} needs {needed}")
    assert missing == [], "make lock (docs/deploy.md)"


@pytest.mark.packaging
def test_the_package_ships_exactly_the_lock():
    assert shipped(cfn.package_dir() / "deployment.zip") == locked()
