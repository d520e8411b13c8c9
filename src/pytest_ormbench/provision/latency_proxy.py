"""A loopback TCP proxy that adds a round-trip time, run in its own process.

Routing a server database's connection (PostgreSQL, MariaDB) through this proxy emulates network latency
without root or ``tc``: every chunk read in either direction is forwarded ``rtt_ms / 2`` after it was read,
so a request/response exchange costs one RTT more than a direct one. The proxy lives in a separate process so
that its event loop never competes with the measured one for the GIL, and so that the benchmark's 0 ms row
(which goes through the proxy too) prices the proxy's own cost.

The parent starts it with :func:`start_proxy`; the child binds ``127.0.0.1:0``, prints one JSON line
(``{"ok": true, "port": N}`` or ``{"ok": false, "error": "..."}``) and serves until its stdin reaches EOF
(the parent closed it, exited or was killed) or it gets SIGTERM/SIGINT. Stdlib only: no pytest, no ORM.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import collections
import json
import math
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
MODULE = "pytest_ormbench.provision.latency_proxy"

#: bytes a direction may hold in its delay queue before the proxy stops reading its source (a window, as TCP has)
QUEUE_LIMIT = 4 * 1024 * 1024
#: the largest chunk a socket read returns
READ_SIZE = 65536


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


# -- the child: the proxy itself ---------------------------------------------------------------------

class _Stats:
    """What the proxy did, written to stderr in one line at exit (for debugging)."""

    def __init__(self) -> None:
        self.accepted = 0
        self.to_target = 0
        self.to_client = 0


class _Pipe:
    """One direction of a pair: chunks read from ``src`` wait in a queue until their deadline, then go to ``dst``.

    No task per chunk: the queue holds ``(deadline, data)`` (``data`` None is the EOF) and a single loop timer,
    armed for the head's deadline, writes every chunk that is due. Deadlines are taken when a chunk is read,
    so they never accumulate, and the queue keeps the order.
    """

    __slots__ = ("pair", "loop", "delay", "src", "dst", "queue", "queued", "timer", "done", "full", "dst_full",
                 "reading", "to_target")

    def __init__(self, pair: _Pair, delay: float, to_target: bool) -> None:
        self.pair = pair
        self.loop = pair.loop
        self.delay = delay
        self.src: asyncio.Transport | None = None
        self.dst: asyncio.Transport | None = None
        self.queue: collections.deque[tuple[float, bytes | None]] = collections.deque()
        self.queued = 0
        self.timer: asyncio.TimerHandle | None = None
        self.done = False          # the EOF has been passed on
        self.full = False          # the queue holds more than QUEUE_LIMIT
        self.dst_full = False      # dst's write buffer is above its high-water mark
        self.reading = True
        self.to_target = to_target

    def feed(self, data: bytes) -> None:
        """A chunk read from src: forwarded now at rtt 0, else queued for ``delay`` seconds."""
        stats = self.pair.stats
        if self.to_target:
            stats.to_target += len(data)
        else:
            stats.to_client += len(data)
        if not self.delay:
            self.dst.write(data)  # type: ignore[union-attr]
            return
        self.queue.append((self.loop.time() + self.delay, data))
        self.queued += len(data)
        if self.queued > QUEUE_LIMIT and not self.full:
            self.full = True
            self._update_reading()
        if self.timer is None:
            self.timer = self.loop.call_at(self.queue[0][0], self.flush)

    def eof(self) -> None:
        """src half-closed: passed on after the chunks already queued (and as late as a chunk read now)."""
        if not self.delay:
            self._write_eof()
            return
        self.queue.append((self.loop.time() + self.delay, None))
        if self.timer is None:
            self.timer = self.loop.call_at(self.queue[0][0], self.flush)

    def flush(self) -> None:
        """The timer fired: write every chunk that is due (joined into one write), re-arm for the next one."""
        self.timer = None
        queue = self.queue
        now = self.loop.time()
        out: list[bytes] = []
        eof = False
        first = True
        while queue and (first or queue[0][0] <= now):
            first = False  # the head is due: the loop fires timers up to its clock resolution early
            data = queue.popleft()[1]
            if data is None:
                eof = True
                break
            out.append(data)
        if out:
            size = sum(map(len, out))
            self.queued -= size
            dst = self.dst
            if dst is not None and not dst.is_closing():
                dst.write(out[0] if len(out) == 1 else b"".join(out))
            if self.full and self.queued <= QUEUE_LIMIT // 2:
                self.full = False
                self._update_reading()
        if eof:
            self._write_eof()
        elif queue:
            self.timer = self.loop.call_at(queue[0][0], self.flush)

    def _write_eof(self) -> None:
        self.done = True
        dst = self.dst
        if dst is not None and not dst.is_closing():
            if dst.can_write_eof():
                try:
                    dst.write_eof()
                except OSError:
                    pass
            else:
                dst.close()
        self.pair.maybe_done()

    def set_dst_full(self, full: bool) -> None:
        """dst's write buffer crossed a watermark: stop or restart reading src (backpressure)."""
        self.dst_full = full
        self._update_reading()

    def _update_reading(self) -> None:
        want = not (self.full or self.dst_full)
        src = self.src
        if want != self.reading and src is not None and not src.is_closing():
            self.reading = want
            if want:
                src.resume_reading()
            else:
                src.pause_reading()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.queue.clear()
        self.queued = 0


class _Side(asyncio.Protocol):
    """One socket of a pair: what it reads goes into ``out``; ``inp`` is the direction that writes to it."""

    def __init__(self, pair: _Pair, out: _Pipe, inp: _Pipe) -> None:
        self.pair = pair
        self.out = out
        self.inp = inp
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        # at most READ_SIZE per read (asyncio's default is 256 KiB): a bulk transfer is queued and passed on
        # in pieces of a socket buffer's size, as a 64 KiB read loop would, rather than in large lumps
        if hasattr(transport, "max_size"):
            transport.max_size = READ_SIZE  # type: ignore[attr-defined]
        self.out.src = transport
        self.inp.dst = transport

    def data_received(self, data: bytes) -> None:
        self.out.feed(data)

    def eof_received(self) -> bool:
        self.out.eof()
        return True  # keep the transport open: the other direction may still be talking (half-close)

    def pause_writing(self) -> None:
        self.inp.set_dst_full(True)

    def resume_writing(self) -> None:
        self.inp.set_dst_full(False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pair.close()  # an error, or the end: either way the other socket has nothing more to do


class _ClientSide(_Side):
    """The accepted socket: reading waits until the target is connected; a failed connect closes it."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert self.transport is not None
        self.transport.pause_reading()
        self.pair.stats.accepted += 1
        self.pair.proxy.pairs.add(self.pair)
        self.pair.connect_task = self.pair.loop.create_task(self.pair.connect())


class _Pair:
    """A client connection and its connection to the target, pumped in two independent directions."""

    def __init__(self, proxy: _Proxy) -> None:
        self.proxy = proxy
        self.loop = proxy.loop
        self.stats = proxy.stats
        delay = proxy.rtt_ms / 2000.0
        self.to_target = _Pipe(self, delay, to_target=True)
        self.to_client = _Pipe(self, delay, to_target=False)
        self.client = _ClientSide(self, self.to_target, self.to_client)
        self.target: _Side | None = None
        self.connect_task: asyncio.Task[None] | None = None
        self.closed = False

    async def connect(self) -> None:
        try:
            await self.loop.create_connection(self._target_side, self.proxy.target_host, self.proxy.target_port)
        except OSError as exc:
            print(f"latency_proxy: cannot connect to {self.proxy.target_host}:{self.proxy.target_port}: {exc}",
                  file=sys.stderr, flush=True)
            self.close()
            return
        if self.closed:  # the client left while the target was being connected
            assert self.target is not None and self.target.transport is not None
            self.target.transport.close()
            return
        self.to_target._update_reading()
        if self.to_target.reading and self.client.transport is not None:
            self.client.transport.resume_reading()

    def _target_side(self) -> _Side:
        self.target = _Side(self, self.to_client, self.to_target)
        return self.target

    def maybe_done(self) -> None:
        """Both directions have passed on their EOF: nothing more can flow, close both sockets."""
        if self.to_target.done and self.to_client.done:
            self.close()

    def close(self) -> None:
        """Closes both sockets (their write buffers still drain); queued chunks not yet due are dropped."""
        if self.closed:
            return
        self.closed = True
        self.to_target.cancel()
        self.to_client.cancel()
        for side in (self.client, self.target):
            if side is not None and side.transport is not None and not side.transport.is_closing():
                side.transport.close()
        self.proxy.pairs.discard(self)


class _Proxy:
    def __init__(self, loop: asyncio.AbstractEventLoop, target_host: str, target_port: int, rtt_ms: float) -> None:
        self.loop = loop
        self.target_host = target_host
        self.target_port = target_port
        self.rtt_ms = rtt_ms
        self.stats = _Stats()
        self.pairs: set[_Pair] = set()

    def accept(self) -> _ClientSide:
        return _Pair(self).client


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
    proxy = _Proxy(loop, target_host, target_port, rtt_ms)
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
