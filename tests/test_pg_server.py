"""The throwaway PostgreSQL server lives exactly as long as the run: started, reachable, durable by default,
and gone (no process, no directory) after stop, after a failed start, and after its owner is SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupts import sigint_as_in_a_terminal

from pytest_ormbench.provision import postgresql as pg_server
from pytest_ormbench.provision.postgresql import (ManagedServer, ServerInfo, ServerUnavailable, connect_url,
    find_binaries, start_server)

try:
    import psycopg
except ImportError:  # pragma: no cover - depends on the environment
    psycopg = None

if psycopg is None:
    pytest.skip("psycopg 3 is not installed (pip install 'psycopg[binary]')", allow_module_level=True)
if find_binaries() is None:
    pytest.skip("no PostgreSQL server binaries (apt-get install postgresql, or set ORMBENCH_PG_BINDIR)",
                allow_module_level=True)
if not Path("/proc/self/cwd").exists():
    pytest.skip("the leftover checks read /proc (Linux)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
#: how long a stop may take: the keeper's every stop signal's wait, plus room for removing the directory
STOP_BUDGET = sum(wait for _, wait in pg_server._PgServer.stop_signals) + 10


def _processes_in(directory: Path) -> list[str]:
    """Processes whose command line names ``directory`` (the postmaster: -D .../data) or whose working
    directory is inside it (every postgres child process runs in the data directory)."""
    found = []
    needle = str(directory)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            try:
                cwd = os.readlink(proc / "cwd")
            except OSError:
                cwd = ""
        except OSError:
            continue
        if needle in cmdline or cwd.startswith(needle):
            found.append(f"{proc.name}: {cmdline.strip()} (cwd {cwd})")
    return found


def _alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _wait_until(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def _server_dirs(base: Path) -> list[Path]:
    return sorted(base.glob("ormbench-pg-*"))


def test_start_connect_stop_leaves_nothing(short_tmpdir: Path) -> None:
    t0 = time.monotonic()
    server = start_server()
    started = time.monotonic() - t0
    try:
        info = server.info
        directory = Path(server.directory)
        assert directory.parent == short_tmpdir  # TMPDIR was short enough and traversable
        assert info.managed and info.host == "127.0.0.1" and info.user == "ormbench" and info.password is None
        assert info.maintenance_db == "postgres"
        assert info.socket_dir == str(directory / "sock")
        assert len(info.socket_dir) + len(f"/.s.PGSQL.{info.port}") < pg_server.MAX_SOCKET_PATH
        assert (Path(info.socket_dir) / f".s.PGSQL.{info.port}").exists()
        # the durable defaults, read back from the server
        assert info.settings["synchronous_commit"] == "on"
        assert info.settings["fsync"] == "on"
        assert info.settings["full_page_writes"] == "on"
        assert info.settings["wal_sync_method"]
        assert info.settings["autovacuum"] == "off"
        with psycopg.connect(info.conninfo("postgres")) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.execute("SHOW server_version").fetchone()[0] == info.version
            assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (True,)
            assert conn.execute("SHOW pg_stat_statements.track_utility").fetchone() == ("on",)
            conn.execute("SELECT count(*) FROM pg_stat_statements").fetchone()
        # the URL form reaches the same server, and connect_url reads it the same way
        other = connect_url(info.url("postgres"))
        assert (other.version, other.settings, other.port, other.managed) == (info.version, info.settings,
                                                                              info.port, False)
        assert ServerInfo.from_json(json.loads(json.dumps(info.to_json()))) == info
        postmaster = int((directory / "data" / "postmaster.pid").read_text().splitlines()[0])
        assert postmaster == server.postmaster_pid and _alive(postmaster)
        if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as nobody
            uid_line = next(ln for ln in Path(f"/proc/{postmaster}/status").read_text().splitlines()
                            if ln.startswith("Uid:"))
            assert uid_line.split()[1:] == ["65534"] * 4
        assert _processes_in(directory)
    finally:
        t0 = time.monotonic()
        server.stop()
        stopped = time.monotonic() - t0
    print(f"start {started:.2f} s, stop {stopped:.2f} s")
    assert not _alive(postmaster)
    assert not _alive(server.keeper_pid)
    assert not directory.exists()
    assert not _processes_in(directory)
    server.stop()  # idempotent
    assert not server.running


def test_settings_apply_to_the_whole_server(short_tmpdir: Path) -> None:
    with start_server({"synchronous_commit": "off", "fsync": "off", "work_mem": "8MB"}) as server:
        assert server.info.settings["synchronous_commit"] == "off"
        assert server.info.settings["fsync"] == "off"
        with psycopg.connect(server.info.conninfo("postgres")) as conn:
            assert conn.execute("SHOW work_mem").fetchone() == ("8MB",)
            assert conn.execute("SHOW fsync").fetchone() == ("off",)
        directory = Path(server.directory)
    assert not directory.exists() and not _processes_in(directory)


def test_a_server_that_fails_to_start_raises_one_line_and_leaves_nothing(short_tmpdir: Path) -> None:
    with pytest.raises(ServerUnavailable) as excinfo:
        start_server({"shared_buffers": "nonsense"})
    message = str(excinfo.value)
    assert "\n" not in message
    assert "postgres failed to start" in message and "shared_buffers" in message, message
    assert not _server_dirs(short_tmpdir)
    assert not _processes_in(short_tmpdir)


@pytest.mark.parametrize("settings", [{"port": "5432"}, {"bad name": "1"}, {"work_mem": "1MB\nfsync = off"}])
def test_settings_the_keeper_owns_or_that_would_corrupt_the_conf_are_refused(settings: dict[str, str]) -> None:
    with pytest.raises(ServerUnavailable):
        start_server(settings)


def test_the_server_goes_when_its_owner_is_sigkilled(short_tmpdir: Path) -> None:
    code = ("import json, sys, time\n"
            "from pytest_ormbench.provision.postgresql import start_server\n"
            "s = start_server()\n"
            "print(json.dumps({'dir': s.directory, 'keeper': s.keeper_pid, 'postmaster': s.postmaster_pid}),"
            " flush=True)\n"
            "time.sleep(120)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, "the owner did not report its server"
        started = json.loads(line)
        directory = Path(started["dir"])
        assert directory.exists() and _alive(started["postmaster"])
        owner.send_signal(signal.SIGKILL)  # no atexit, no finally: only the closed pipe tells the keeper
        owner.wait()
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
    assert _wait_until(lambda: not directory.exists() and not _processes_in(directory)
                       and not _alive(started["postmaster"]) and not _alive(started["keeper"]), STOP_BUDGET), \
        (directory.exists(), _processes_in(directory), _alive(started["postmaster"]), _alive(started["keeper"]))


@pytest.mark.parametrize("phase", ["starting", "running"])
def test_ctrl_c_in_the_owner_leaves_nothing(short_tmpdir: Path, phase: str) -> None:
    """SIGINT to the owner's whole process group, as a terminal sends it: the keeper (its own session) is
    not hit, and the owner stops it, whether it was still starting (KeyboardInterrupt while waiting for the
    report) or running (atexit, no explicit stop)."""
    code = ("import sys, time\n"
            "from pytest_ormbench.provision.postgresql import start_server\n"
            "s = start_server()\n"
            "print('up', flush=True)\n"
            "time.sleep(120)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=env, start_new_session=True, preexec_fn=sigint_as_in_a_terminal)
    try:
        if phase == "starting":
            assert _wait_until(lambda: bool(_server_dirs(short_tmpdir)), 15), "no server directory appeared"
        else:
            assert owner.stdout is not None and owner.stdout.readline() == "up\n"
        directory = _server_dirs(short_tmpdir)[0]
        os.killpg(owner.pid, signal.SIGINT)
        owner.wait(timeout=30)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
    assert _wait_until(lambda: not directory.exists() and not _processes_in(directory), STOP_BUDGET), \
        (directory.exists(), _processes_in(directory))


def test_postgres_dies_with_its_keeper(short_tmpdir: Path) -> None:
    """The parent-death signal survives the switch to nobody: a SIGKILLed keeper takes postgres with it,
    and stop() then removes the directory nobody else could."""
    server = start_server()
    directory, postmaster = Path(server.directory), server.postmaster_pid
    try:
        os.kill(server.keeper_pid, signal.SIGKILL)
        assert _wait_until(lambda: not _alive(postmaster), 10), "postgres outlived its keeper"
    finally:
        server.stop()
    assert not directory.exists()
    assert _wait_until(lambda: not _processes_in(directory), 5), _processes_in(directory)


def test_sigterm_to_the_keeper_stops_the_server(short_tmpdir: Path) -> None:
    """Within the keeper's own budget (``STOP_BUDGET``)."""
    budget = STOP_BUDGET
    server = start_server()
    directory = Path(server.directory)
    try:
        os.kill(server.keeper_pid, signal.SIGTERM)
        assert _wait_until(lambda: not _alive(server.keeper_pid), budget), \
            f"the keeper still runs after {budget:g} s; left: {_processes_in(directory)}"
        assert not directory.exists() and not _processes_in(directory)
    finally:
        server.stop()


def test_connect_url_to_a_closed_port_names_the_url_without_its_password() -> None:
    with pytest.raises(ServerUnavailable) as excinfo:
        connect_url("postgresql://ormbench:s3cret-pw@127.0.0.1:1/x", timeout=2)
    message = str(excinfo.value)
    assert "\n" not in message and "s3cret-pw" not in message
    assert "127.0.0.1:1/x" in message and "ormbench" in message, message
    with pytest.raises(ServerUnavailable) as excinfo:
        connect_url("mysql://root:s3cret-pw@127.0.0.1/x")
    assert "s3cret-pw" not in str(excinfo.value) and "not a PostgreSQL URL" in str(excinfo.value)


def test_no_binaries_says_how_to_get_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORMBENCH_PG_BINDIR", str(tmp_path))
    monkeypatch.setenv("PATH", "")
    assert find_binaries() is None
    with pytest.raises(ServerUnavailable) as excinfo:
        start_server()
    message = str(excinfo.value)
    assert "\n" not in message
    assert "apt-get install postgresql" in message and "--ormbench-postgresql-url=postgresql://" in message
    assert str(tmp_path) in message


def test_find_binaries_order(tmp_path: Path) -> None:
    found = find_binaries({"PATH": os.environ.get("PATH", "")})
    assert found is not None and (found / "initdb").exists() and (found / "postgres").exists()
    assert find_binaries({"ORMBENCH_PG_BINDIR": str(found), "PATH": ""}) == found
    # without PATH, Debian's /usr/lib/postgresql/*/bin is still found
    if list(Path("/usr/lib/postgresql").glob("*/bin/postgres")):
        assert find_binaries({"PATH": ""}) is not None


def test_conninfo_and_url_quote_what_needs_it() -> None:
    info = ServerInfo(host="db.example", port=5433, user="me", password="p w'\\@:/", socket_dir=None,
                      version="15.1", managed=False, maintenance_db="postgres", settings={"fsync": "on"})
    assert info.conninfo("my db") == r"host=db.example port=5433 user=me password='p w\'\\@:/' dbname='my db'"
    assert psycopg.conninfo.conninfo_to_dict(info.conninfo("my db"))["password"] == "p w'\\@:/"
    url = info.url("my db", scheme="postgresql+psycopg")
    assert url == "postgresql+psycopg://me:p%20w%27%5C%40%3A%2F@db.example:5433/my%20db"
    assert psycopg.conninfo.conninfo_to_dict(info.url("my db"))["password"] == "p w'\\@:/"
    v6 = ServerInfo(host="::1", port=5432, user="u", password=None, socket_dir=None, version="15",
                    managed=False)
    assert v6.url("d") == "postgresql://u@[::1]:5432/d"
    assert ServerInfo.from_json(info.to_json()) == info


def test_redaction() -> None:
    assert pg_server._redact("postgresql://u:pw@h:1/d") == "postgresql://u:***@h:1/d"
    assert pg_server._redact("postgresql://u@h/d?password=pw&x=1") == "postgresql://u@h/d?password=***&x=1"
    assert isinstance(ManagedServer, type)
