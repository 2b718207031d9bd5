"""Cold start: `import app` — what every function of the engine pays before its first
invocation — loads only what every path needs. Token crypto, AWS SDK, migrations,
cron evaluation and the runner load where they are used, and nothing of the tests
or the development tools ever does."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from infra import bytecode
from infra import package as infra_package
from tests.support import cfn

ROOT = Path(__file__).resolve().parents[1]
LIBRARIES = "import chalice, pymysql; from aws_lambda_powertools import Logger, Metrics"
# A production-like API configuration with an HS256 key: no ARN, no JWKS.
HS256_ENV = {
    "EVENTS_DB_URL": "mysql://app:pw@db.internal:3306/events",
    "EVENTS_JWT_SECRET": "a-key-long-enough-for-hs256-0123456789abcdef",
    "EVENTS_JWT_ISSUER": "events",
    "EVENTS_JWT_AUDIENCE": "events-console",
}
# Each loads only where its path needs it.
NOT_WITH_THE_APP = (
    "jwt",  # the first token checked
    "boto3", "botocore.client",  # a secret, topic or function ARN in use (botocore itself comes with Powertools)
    "yoyo",  # the migrate function
    "croniter", "zoneinfo",  # a schedule checked or evaluated
    "fastjsonschema",  # the first body or parameters checked
    "tenacity",  # a unit of work that failed once
    "chalicelib.events.runner", "chalicelib.events.actions.perform",  # the tick function
    "chalicelib.secrets", "chalicelib.migrate", "chalicelib.migrate_function",
)


def _loaded(statement: str) -> dict[str, str | None]:
    """Module name -> file of every module loaded after `statement`, in a new interpreter."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVENTS_", "GAME_", "WEBHOOK_", "CUE_", "ANNOUNCE_"))}
    report = "import sys, json; print(json.dumps({n: getattr(m, '__file__', None) for n, m in list(sys.modules.items())}))"
    done = subprocess.run([sys.executable, "-c", f"{statement}; {report}"], cwd=ROOT, env={**env, **HS256_ENV},
                          capture_output=True, text=True, check=True, timeout=120)
    return json.loads(done.stdout)


@pytest.mark.realtime  # a fresh interpreter
def test_import_app_loads_no_token_crypto_sdk_migrations_cron_or_runner():
    libraries = _loaded(LIBRARIES)
    app = _loaded("import app")
    unwanted = sorted(name for name in app if name.startswith(tuple(p + "." for p in NOT_WITH_THE_APP))
                      or name in NOT_WITH_THE_APP)
    assert unwanted == []
    # PyMySQL itself loads part of cryptography (for RSA password exchange); the app adds none of it.
    assert sorted(n for n in app if n.startswith("cryptography") and n not in libraries) == []


@pytest.mark.realtime  # a fresh interpreter
def test_import_app_loads_nothing_from_the_tests_or_the_development_tools():
    app = _loaded("import app")
    development = [ROOT / "tests", ROOT / "devtools", ROOT / "bench"]
    outside = sorted(name for name, file in app.items()
                     if file and any(Path(file).resolve().is_relative_to(place) for place in development))
    assert outside == []


@pytest.mark.packaging
def test_the_package_holds_the_app_and_its_libraries_and_no_tests_benchmarks_or_dev_tools():
    with zipfile.ZipFile(cfn.package_dir() / "deployment.zip") as package:
        names = package.namelist()
    tops = {name.split("/")[0] for name in names}
    assert {"app.py", "chalicelib", "pymysql", "aws_lambda_powertools"} <= tops
    assert tops & {"tests", "devtools", "bench", "infra", "docs", ".chalice"} == set()
    assert not [name for name in names if name.startswith("chalicelib/") and "test" in name.rsplit("/", 1)[-1]]


@pytest.mark.packaging
def test_the_package_carries_bytecode_so_a_cold_start_compiles_none_of_its_modules(tmp_path):
    """On the functions' runtime (python3.13, not the tests' 3.11): its bytecode and its compiled wheels load there."""
    with zipfile.ZipFile(cfn.package_dir() / "deployment.zip") as package:
        package.extractall(tmp_path)
    # Isolated and read-only in effect (-B), as Lambda runs it; every compile() of a packaged file is counted.
    probe = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); compiled = []; "
             "sys.addaudithook(lambda event, args: event == 'compile' and compiled.append(str(args[1]))); "
             "import app; import chalicelib.events.runner.lambda_handler; import cryptography.hazmat.bindings._rust; "
             "import _cffi_backend; "
             f"print(sum(f.startswith({str(tmp_path)!r}) for f in compiled), app.__file__, _cffi_backend.__file__, "
             "'%d.%d' % sys.version_info[:2])")
    done = subprocess.run([str(infra_package.runtime_python()), "-I", "-B", "-c", probe], cwd=tmp_path,
                          env={**os.environ, **HS256_ENV}, capture_output=True, text=True, check=True, timeout=120)
    compiled, app_file, cffi_file, version = done.stdout.split()
    assert f"python{version}" == infra_package.RUNTIME == "python3.13"
    assert Path(app_file).is_relative_to(tmp_path) and Path(cffi_file).is_relative_to(tmp_path)  # the package's, not a venv's
    assert compiled == "0"


@pytest.mark.packaging
def test_the_functions_run_a_python_lambda_supports_past_2027():
    """python3.11 takes no new function from 2027-07-31: the package is built for python3.13, its runtime,
    its compiled wheels and its bytecode alike."""
    runtimes = {spec["Properties"]["Runtime"] for spec in cfn.packaged_app()["Resources"].values()
                if spec["Type"] == "AWS::Serverless::Function"}
    assert runtimes == {"python3.13"}
    with zipfile.ZipFile(cfn.package_dir() / "deployment.zip") as package:
        names = package.namelist()
    assert "__pycache__/app.cpython-313.pyc" in names and not [n for n in names if ".cpython-311" in n]
    assert bytecode.foreign_extensions(cfn.package_dir() / "deployment.zip", "python3.13") == []
    assert bytecode.foreign_extensions(cfn.package_dir() / "deployment.zip", "python3.11") == [  # what the check tells apart
        "_cffi_backend.cpython-313-x86_64-linux-gnu.so"]


def test_without_the_runtimes_python_packaging_stops_saying_how_to_get_it():
    """A machine with no python3.13 (or one that cannot make a venv): make package names what to install."""
    asked = []

    def version_of(candidate: str) -> str | None:
        asked.append(candidate)
        return {"/usr/bin/python3": "3.11", "/opt/broken/python3.13": None}.get(candidate)

    with pytest.raises(infra_package.RuntimeMissing, match=r"apt-get install python3\.13 python3\.13-venv.*pyenv install 3\.13"):
        infra_package.runtime_interpreter(["/usr/bin/python3", "/opt/broken/python3.13"], version_of)
    assert asked == ["/usr/bin/python3", "/opt/broken/python3.13"]
    found = infra_package.runtime_interpreter(["/usr/bin/python3", "/x/python3.13"], lambda c: "3.13" * c.endswith("3.13"))
    assert found == "/x/python3.13"


def test_bytecode_from_the_working_tree_is_replaced_by_the_packages_own(tmp_path, monkeypatch):
    """A `__pycache__` left by running the code locally is timestamp-checked: in a zip it would be ignored. The
    package's own goes where the runtime looks, whatever PYTHONPYCACHEPREFIX the build runs under (`make` sets one)."""
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    package = tmp_path / "deployment.zip"
    stale = f"chalicelib/__pycache__/module.{sys.implementation.cache_tag}.pyc"
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("chalicelib/module.py", "ANSWER = 42\n")
        archive.writestr(stale, b"stale timestamp-checked bytecode")
    assert bytecode.add_bytecode(package) == 1
    with zipfile.ZipFile(package) as archive:
        assert sorted(archive.namelist()) == sorted(["chalicelib/module.py", stale])
        flags = int.from_bytes(archive.read(stale)[4:8], "little")
    assert flags == 0b01, "an unchecked-hash .pyc, valid whatever the zip's timestamps"
