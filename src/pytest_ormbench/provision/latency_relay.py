"""The latency proxy's relay: every chunk read in either direction is passed on ``rtt_ms / 2`` after it was read.

A :class:`Relay` accepts clients, connects each to the target and pumps the two directions independently, with
backpressure (a direction stops reading its source while its queue or its destination's write buffer is full)
and half-close. It runs on the event loop of the proxy's own process (``latency_proxy``, which starts it and
serves it). Stdlib only: no pytest, no ORM.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import sys

#: bytes a direction may hold in its delay queue before the proxy stops reading its source (a window, as TCP has)
QUEUE_LIMIT = 4 * 1024 * 1024
#: the largest chunk a socket read returns
READ_SIZE = 65536


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

    def __init__(self, proxy: Relay) -> None:
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


class Relay:
    """The listening side: each accepted client becomes a pair with its own connection to the target."""

    def __init__(self, loop: asyncio.AbstractEventLoop, target_host: str, target_port: int, rtt_ms: float) -> None:
        self.loop = loop
        self.target_host = target_host
        self.target_port = target_port
        self.rtt_ms = rtt_ms
        self.stats = _Stats()
        self.pairs: set[_Pair] = set()

    def accept(self) -> _ClientSide:
        return _Pair(self).client
