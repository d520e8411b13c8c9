"""The latency proxy: bytes arrive intact and in order, each exchange costs one RTT more (never more than one
per exchange, however many chunks), and the proxy process goes away with stop() or with its parent.

No database: an echo server on loopback stands in for the target. The machine may be shared, so the lower
bounds on delays are strict and the upper bounds generous.
"""

from __future__ import annotations

import os
import signal
import socket
import socketserver
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from pytest_ormbench.provision.latency_proxy import MODULE, LatencyProxy, ProxyError, start_proxy

SRC = Path(__file__).resolve().parents[1] / "src"


class _Echo(socketserver.BaseRequestHandler):
    """Sends back what it reads; closes when the client half-closes (so EOF is seen to travel both ways)."""

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := sock.recv(65536):
            sock.sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    @property
    def port(self) -> int:
        return self.server_address[1]

    def serve(self) -> None:
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


@pytest.fixture
def echo() -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), _Echo)
    server.serve()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxies() -> Iterator[list[LatencyProxy]]:
    """Proxies a test starts: stopped afterwards even when it fails."""
    started: list[LatencyProxy] = []
    yield started
    for proxy in started:
        proxy.stop()


def _proxy(proxies: list[LatencyProxy], port: int, rtt_ms: float) -> LatencyProxy:
    proxy = start_proxy("127.0.0.1", port, rtt_ms)
    proxies.append(proxy)
    return proxy


def _connect(port: int, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return bytes(buf)


def _exchange(sock: socket.socket, msg: bytes) -> float:
    """Seconds from sending ``msg`` until all of its echo is back."""
    t0 = time.perf_counter()
    sock.sendall(msg)
    assert _recv_exactly(sock, len(msg)) == msg
    return time.perf_counter() - t0


def _refuses(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def _proxy_pids(target_port: int) -> list[int]:
    """Proxy processes for this target, found from /proc (a zombie has no cmdline, so it does not count)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if MODULE.encode() in args and str(target_port).encode() in args:
            pids.append(int(entry.name))
    return pids


def _payload(n: int) -> bytes:
    """Bytes whose every 4-byte word is its own index: a reordered or dropped chunk cannot go unseen."""
    return b"".join(i.to_bytes(4, "big") for i in range(n // 4))


def _round_trip_concurrently(sock: socket.socket, data: bytes) -> bytes:
    sender = threading.Thread(target=sock.sendall, args=(data,))
    sender.start()
    got = _recv_exactly(sock, len(data))
    sender.join()
    return got


# -- bytes -------------------------------------------------------------------------------------------

def test_at_rtt_0_a_message_and_a_megabyte_round_trip_intact(echo: _Server, proxies: list[LatencyProxy]) -> None:
    proxy = _proxy(proxies, echo.port, 0)
    assert (proxy.host, proxy.rtt_ms) == ("127.0.0.1", 0.0)
    with _connect(proxy.port) as sock:
        sock.sendall(b"hello, database")
        assert _recv_exactly(sock, 15) == b"hello, database"
        data = _payload(1 << 20)
        assert _round_trip_concurrently(sock, data) == data


def test_with_a_delay_a_megabyte_keeps_its_order(echo: _Server, proxies: list[LatencyProxy]) -> None:
    proxy = _proxy(proxies, echo.port, 10)
    with _connect(proxy.port) as sock:
        data = _payload(1 << 20)
        assert _round_trip_concurrently(sock, data) == data


def test_a_half_close_travels_through_after_the_data(echo: _Server, proxies: list[LatencyProxy]) -> None:
    proxy = _proxy(proxies, echo.port, 10)
    with _connect(proxy.port) as sock:
        sock.sendall(b"last words")
        sock.shutdown(socket.SHUT_WR)  # the echo server sees EOF, sends back what it read, and closes
        assert _recv_exactly(sock, 10) == b"last words"
        assert sock.recv(100) == b""


# -- time --------------------------------------------------------------------------------------------

def test_each_exchange_costs_one_rtt_more(echo: _Server, proxies: list[LatencyProxy]) -> None:
    proxy = _proxy(proxies, echo.port, 20)
    with _connect(echo.port) as direct, _connect(proxy.port) as proxied:
        _exchange(proxied, b"warm")
        via = [_exchange(proxied, b"x" * 100) for _ in range(10)]
        plain = [_exchange(direct, b"x" * 100) for _ in range(10)]
    assert min(via) >= 0.020 * 0.999, via  # each half waits rtt/2 from the moment it was read: never less
    assert statistics.median(via) < 0.020 + 0.015, via
    assert statistics.median(plain) < 0.005, plain


def test_delays_do_not_accumulate_over_chunks(echo: _Server, proxies: list[LatencyProxy]) -> None:
    """Five chunks 1 ms apart: the last echo is back one RTT after the last send, not five RTTs after the first."""
    rtt = 0.040
    proxy = _proxy(proxies, echo.port, rtt * 1000)
    with _connect(proxy.port) as sock:
        _exchange(sock, b"warm")
        chunks = [bytes([65 + i]) * 200 for i in range(5)]
        t0 = time.perf_counter()
        for chunk in chunks:
            sock.sendall(chunk)
            time.sleep(0.001)
        t_last = time.perf_counter()
        got = _recv_exactly(sock, 1000)
        elapsed = time.perf_counter() - t0
    assert got == b"".join(chunks)
    assert elapsed >= rtt * 0.999
    assert elapsed < (t_last - t0) + rtt + 0.025, elapsed  # sleeping rtt/2 per chunk takes some 3 rtt here


# -- the process -------------------------------------------------------------------------------------

def test_stop_ends_the_process_and_closes_the_port(echo: _Server) -> None:
    with start_proxy("127.0.0.1", echo.port, 5) as proxy:
        with _connect(proxy.port) as sock:
            _exchange(sock, b"ping")
            proxy.stop()
            assert proxy.process.poll() is not None
            assert sock.recv(10) == b""  # the open connection was closed too
    proxy.stop()  # idempotent
    assert proxy.process.poll() is not None
    assert _refuses(proxy.port)
    assert _proxy_pids(echo.port) == []


def test_sigterm_ends_the_proxy(echo: _Server, proxies: list[LatencyProxy]) -> None:
    proxy = _proxy(proxies, echo.port, 0)
    proxy.process.send_signal(signal.SIGTERM)
    assert proxy.process.wait(timeout=5) == 0
    assert _refuses(proxy.port)


def test_the_proxy_goes_when_its_parent_is_killed(echo: _Server) -> None:
    code = ("import sys, time; from pytest_ormbench.provision.latency_proxy import start_proxy;"
            f"p = start_proxy('127.0.0.1', {echo.port}, 1); print(p.port, flush=True); time.sleep(60)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC)] + [os.environ.get("PYTHONPATH", "")]))
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()
        assert line.strip().isdigit(), line
        port = int(line)
        assert _proxy_pids(echo.port)
        with _connect(port) as sock:
            _exchange(sock, b"alive")
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 5
        while (_proxy_pids(echo.port) or not _refuses(port)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _proxy_pids(echo.port) == []
        assert _refuses(port)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in _proxy_pids(echo.port):  # only if the test failed: the proxy this test started
            os.kill(pid, signal.SIGKILL)
        for pipe in (parent.stdout, parent.stderr):
            if pipe:
                pipe.close()


def test_a_target_that_refuses_closes_the_client_and_the_proxy_serves_on(proxies: list[LatencyProxy]) -> None:
    server = _Server(("127.0.0.1", 0), _Echo, bind_and_activate=False)
    server.server_bind()  # bound, not listening: a connection to it is refused
    serving = False
    try:
        proxy = _proxy(proxies, server.port, 0)
        with _connect(proxy.port, timeout=3) as sock:
            t0 = time.perf_counter()
            assert sock.recv(10) == b""
            assert time.perf_counter() - t0 < 2
        server.server_activate()
        server.serve()
        serving = True
        with _connect(proxy.port) as sock:
            _exchange(sock, b"now it listens")
        assert proxy.process.poll() is None
    finally:
        if serving:
            server.shutdown()
        server.server_close()


def test_a_bad_rtt_is_refused_before_anything_starts() -> None:
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            start_proxy("127.0.0.1", 1, bad)
    assert issubclass(ProxyError, Exception)
