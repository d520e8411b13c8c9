"""A loopback TCP proxy that adds a round-trip time, run in its own process.

Routing a server database's connection (PostgreSQL, MariaDB) through this proxy emulates network latency
without root or ``tc``: every chunk read in either direction is forwarded ``rtt_ms / 2`` after it was read,
so a request/response exchange costs one RTT more than a direct one. The proxy lives in a separate process so
that its event loop never competes with the measured one for the GIL, and so that the benchmark's 0 ms row
(which goes through the proxy too) prices the proxy's own cost.

The parent starts it with :func:`start_proxy`; the child binds ``127.0.0.1:0``, prints one JSON line
(``{"ok": true, "port": N}`` or ``{"ok": false, "error": "..."}``) and serves until its stdin reaches EOF
(the parent closed it, exited or was killed) or it gets SIGTERM/SIGINT. This module is the process around the
relay (``latency_relay``: the delaying itself): the parent's handle on it, and the child's ``python -m`` main.
Stdlib only: no pytest, no ORM.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import math
import os
import select
import selectors
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from pytest_ormbench.provision.latency_relay import Relay

HOST = "127.0.0.1"
MODULE = "pytest_ormbench.provision.latency_proxy"


class ProxyError(Exception):
    """The proxy process could not be started or did not report its port."""


# -- the parent's side -------------------------------------------------------------------------------

_RUNNING: set[LatencyProxy] = set()


class LatencyProxy:
    """A running proxy process: clients connect to ``(host, port)`` and reach the target ``rtt_ms`` later."""

    host: str = HOST

    def __init__(self, process: subprocess.Popen[bytes], port: int, rtt_ms: float,
                 target_host: str, target_port: int) -> None:
        self.process = process
        self.port = port
        self.rtt_ms = rtt_ms
        self.target_host = target_host
        self.target_port = target_port

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        """Ends the process (idempotent): closing its stdin is the normal way out; then SIGTERM, then SIGKILL."""
        _RUNNING.discard(self)
        proc = self.process
        if proc.poll() is None:
            try:
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=3)
            except (OSError, subprocess.TimeoutExpired):
                proc.terminate()
                try:
                    proc.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe:
                try:
                    pipe.close()
                except OSError:
                    pass

    def __enter__(self) -> LatencyProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.process.poll() is None else f"exited {self.process.returncode}"
        return (f"LatencyProxy({self.host}:{self.port} -> {self.target_host}:{self.target_port}, "
                f"rtt {self.rtt_ms:g} ms, pid {self.pid}, {state})")


def _stop_all() -> None:
    """atexit: a proxy the caller forgot still ends with the parent (its stdin EOF would end it anyway)."""
    for proxy in list(_RUNNING):
        proxy.stop()


atexit.register(_stop_all)


def _child_env() -> dict[str, str]:
    """The parent's environment with this package's root first on the path, so the child runs this same code."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([root] + ([old] if old else []))
    return env


def start_proxy(target_host: str, target_port: int, rtt_ms: float, timeout: float = 10.0) -> LatencyProxy:
    """Starts the proxy process and waits (up to ``timeout`` s) for the port it listens on.

    The child gets its own session (a Ctrl-C meant for the benchmark does not hit it first) and a stdin pipe
    whose EOF tells it the parent is gone, however the parent ended.
    """
    if not (isinstance(rtt_ms, (int, float)) and math.isfinite(rtt_ms) and rtt_ms >= 0):
        raise ValueError(f"rtt_ms must be a finite number >= 0, not {rtt_ms!r}")
    cmd = [sys.executable, "-m", MODULE, "--target-host", target_host, "--target-port", str(int(target_port)),
           "--rtt-ms", repr(float(rtt_ms))]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                start_new_session=True, env=_child_env())
    except OSError as exc:
        raise ProxyError(f"cannot start the latency proxy: {exc}") from None
    try:
        line = _read_line(proc, timeout)
        try:
            report = json.loads(line)
        except ValueError:
            raise ProxyError(f"the latency proxy printed {line[:200]!r}, not its JSON report") from None
        if not report.get("ok"):
            raise ProxyError(f"the latency proxy failed: {report.get('error', 'no reason given')}")
        proxy = LatencyProxy(proc, int(report["port"]), float(rtt_ms), target_host, int(target_port))
    except BaseException:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe:
                pipe.close()
        raise
    _RUNNING.add(proxy)
    return proxy


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """The child's first stdout line, or ProxyError when it exits or the timeout passes first."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ProxyError(f"the latency proxy did not report its port within {timeout:g} s")
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            raise ProxyError(f"the latency proxy exited (status {proc.wait()}) before reporting its port; "
                             "its stderr says why")
        buf += chunk
    return buf.split(b"\n", 1)[0].decode("utf-8", "replace")


# -- the child: the process that serves the relay ------------------------------------------------

class _StdinWatcher(asyncio.Protocol):
    """Stdin's EOF means the parent is gone (or wants the proxy gone)."""

    def __init__(self, stop: asyncio.Event) -> None:
        self.stop = stop

    def eof_received(self) -> bool:
        self.stop.set()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.stop.set()


def _report(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def _serve(target_host: str, target_port: int, rtt_ms: float) -> int:
    loop = asyncio.get_running_loop()
    proxy = Relay(loop, target_host, target_port, rtt_ms)
    stop = asyncio.Event()
    try:
        server = await loop.create_server(proxy.accept, HOST, 0, backlog=128)
    except OSError as exc:
        _report({"ok": False, "error": f"cannot listen on {HOST}: {exc}"})
        return 1
    port = server.sockets[0].getsockname()[1]
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await loop.connect_read_pipe(lambda: _StdinWatcher(stop), sys.stdin)
    except (ValueError, OSError, AttributeError):  # stdin a regular file, or none: watch from a thread
        def watch() -> None:
            try:
                sys.stdin.buffer.read()
            except (OSError, ValueError, AttributeError):
                pass
            loop.call_soon_threadsafe(stop.set)
        threading.Thread(target=watch, daemon=True).start()
    _report({"ok": True, "port": port})
    await stop.wait()
    server.close()
    for pair in list(proxy.pairs):
        pair.close()
    for _ in range(3):  # let the transports run their close callbacks
        await asyncio.sleep(0)
    s = proxy.stats
    try:
        print(f"latency_proxy {HOST}:{port} -> {target_host}:{target_port} rtt {rtt_ms:g} ms: "
              f"{s.accepted} connections, {s.to_target} bytes to the target, {s.to_client} bytes to clients",
              file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return 0


def _tighten_timer_slack() -> None:
    """Linux lets a sleeping thread wake up to 50 µs late (its timer slack), which each delay would add; asking
    for 1 ns brings a wake-up to within some 10-30 µs of its deadline. Best effort: elsewhere nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)  # PR_SET_TIMERSLACK, 1 ns
    except (OSError, AttributeError):
        pass


def _new_loop() -> asyncio.AbstractEventLoop:
    """A plain asyncio loop on select(): its timeout has microsecond resolution where epoll's has a millisecond,
    which would add up to 1 ms to each delay (100 % of a 1 ms RTT). A proxy holds a handful of sockets."""
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--target-host", required=True)
    parser.add_argument("--target-port", type=int, required=True)
    parser.add_argument("--rtt-ms", type=float, required=True)
    args = parser.parse_args(argv)
    if args.rtt_ms:
        _tighten_timer_slack()
    try:
        with asyncio.Runner(loop_factory=_new_loop) as runner:
            return runner.run(_serve(args.target_host, args.target_port, args.rtt_ms))
    except Exception as exc:  # before the report the parent reads this line; after it, only stderr is read
        traceback.print_exc()
        _report({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1


if __name__ == "__main__":
    sys.exit(main())
