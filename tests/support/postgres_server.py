"""A real PostgreSQL server on 127.0.0.1 for tests, from the Debian binaries (``apt-get install postgresql``).

Why not a mock: the Dagster instance's run, event-log and schedule storage (``dagster-postgres``) is tested against
the server it will meet in production. The cluster lives in a temporary folder, listens on a free port with trust
authentication for local connections only, and is stopped and removed at the end. ``initdb`` and ``postgres`` refuse
to run as root, so as root they run as the ``postgres`` system user, in a folder that user owns.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVER_USER = "postgres"


@dataclass(frozen=True)
class PostgresServer:
    """Where the test server listens; ``url(db)`` is a libpq URL for ``psycopg2.connect``."""

    host: str
    port: int
    user: str

    def url(self, db_name: str) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{db_name}"


def binaries() -> Path | None:
    """The folder of ``initdb`` and ``pg_ctl``: on PATH, else the newest ``/usr/lib/postgresql/<version>/bin``."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def postgres_server(databases: tuple[str, ...] = ()) -> Iterator[PostgresServer]:
    """A started server with ``databases`` created; stopped and its folder removed on exit."""
    import psycopg2

    bin_dir = binaries()
    if bin_dir is None:
        raise FileNotFoundError("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
    as_root = os.geteuid() == 0
    prefix = ["runuser", "-u", SERVER_USER, "--"] if as_root else []
    root = Path(tempfile.mkdtemp(prefix="aesforge-pg-"))
    if as_root:
        account = pwd.getpwnam(SERVER_USER)
        os.chown(root, account.pw_uid, account.pw_gid)
    data, log = root / "data", root / "server.log"
    port = _free_port()
    user = SERVER_USER if as_root else pwd.getpwuid(os.geteuid()).pw_name
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off -c full_page_writes=off"

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, text=True, cwd=root)

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", user, "-A", "trust", "-E", "UTF8", "--no-sync")
        try:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start")
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"postgres did not start: {exc.stderr.strip()} {log.read_text(errors='replace')[-2000:]}")
        server = PostgresServer(host="127.0.0.1", port=port, user=user)
        try:
            with closing(psycopg2.connect(server.url("postgres"))) as connection:
                connection.autocommit = True  # CREATE DATABASE runs outside a transaction
                with connection.cursor() as cursor:
                    for name in databases:
                        cursor.execute(f'CREATE DATABASE "{name}"')
            yield server
        finally:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
