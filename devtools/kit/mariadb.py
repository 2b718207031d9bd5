"""Find a MySQL/MariaDB server for the tests and `make dev`, or start a private one.

Order: `EVENTS_TEST_DB_URL` if set; the machine's server on 127.0.0.1:3306 (root,
no password) if it answers; else a private `mariadbd` in a folder of ours,
installing Debian's `mariadb-server` first when it is missing and we are root.
The private server is also what the crash tests kill -9 and restart.

    python -m devtools.kit.mariadb url     # print a server URL (starting one if needed)
    python -m devtools.kit.mariadb stop    # stop the private server, if ours is running
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pymysql

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_HOME = ROOT / ".local" / "mariadb"
MACHINE_SERVER = "mysql://root@127.0.0.1:3306/"


def answers(host: str, port: int, user: str = "root", password: str = "") -> bool:
    try:
        pymysql.connect(host=host, port=port, user=user, password=password, connect_timeout=2).close()
        return True
    except pymysql.err.MySQLError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_binaries() -> None:
    if shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists():
        return
    if os.geteuid() != 0:
        sys.exit("mariadbd is not installed: run `sudo apt-get install -y mariadb-server`, then try again")
    print("installing mariadb-server (Debian package)…", file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", "mariadb-server"], check=True, env=env)


class PrivateMariaDB:
    """A mariadbd of our own: a data folder, a port, and a process we may kill."""

    def __init__(self, home: Path, port: int | None = None, options: tuple[str, ...] = ()):
        self.home = Path(home)
        self.options = options  # more mariadbd options (the TLS test's certificates)
        self.datadir = self.home / "data"
        self.port_file = self.home / "port"
        self.pid_file = self.home / "mariadbd.pid"
        self.port = port or (int(self.port_file.read_text()) if self.port_file.exists() else _free_port())
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"mysql://root@127.0.0.1:{self.port}/"

    def running(self) -> bool:
        return answers("127.0.0.1", self.port)

    def start(self, timeout: float = 60) -> PrivateMariaDB:
        if self.running():
            return self
        _ensure_binaries()
        self.home.mkdir(parents=True, exist_ok=True)
        if not (self.datadir / "mysql").exists():
            subprocess.run(
                [
                    "mariadb-install-db", "--no-defaults", f"--datadir={self.datadir}",
                    "--auth-root-authentication-method=normal", "--skip-test-db", f"--user={getpass.getuser()}",
                ],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        self.port_file.write_text(str(self.port))
        daemon = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
        command = [
            daemon, "--no-defaults", f"--datadir={self.datadir}", f"--port={self.port}",
            "--bind-address=127.0.0.1", f"--socket={self.home / 'mariadbd.sock'}",
            f"--pid-file={self.pid_file}", f"--log-error={self.home / 'error.log'}",
            "--skip-name-resolve", "--innodb-buffer-pool-size=256M", "--max-connections=500", *self.options,
        ]
        if os.geteuid() == 0:
            command.append("--user=root")
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self.running():
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = (self.home / "error.log").read_text()[-2000:] if (self.home / "error.log").exists() else ""
                raise RuntimeError(f"private mariadbd did not start on port {self.port}:\n{log}")
            time.sleep(0.1)
        return self

    def _pid(self) -> int | None:
        if self.process and self.process.poll() is None:
            return self.process.pid
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def kill(self) -> None:
        """SIGKILL, as a crash would: no clean shutdown, InnoDB recovers on start."""
        pid = self._pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid)

    def stop(self) -> None:
        pid = self._pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
            self._wait_gone(pid)

    def _wait_gone(self, pid: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process and self.process.pid == pid:
                if self.process.poll() is not None:
                    return
            else:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"mariadbd {pid} did not stop")


def server_url() -> str:
    """A server URL without a database: the configured one, the machine's, or ours."""
    configured = os.environ.get("EVENTS_TEST_DB_URL")
    if configured:
        return configured
    if answers("127.0.0.1", 3306):
        return MACHINE_SERVER
    return PrivateMariaDB(DEFAULT_HOME).start().url


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "url"
    if command == "url":
        print(server_url())
    elif command == "stop":
        PrivateMariaDB(DEFAULT_HOME).stop()
    else:
        sys.exit(f"unknown command {command!r}: use url or stop")
