"""Instructions of the measured op alone, counted by valgrind's callgrind.

The worker runs under ``valgrind --tool=callgrind --instr-atstart=no``: nothing is counted
while Python starts, imports the ORM, prepares rows or verifies. Right before the op's first
clock read the worker zeroes callgrind's counters and switches instrumentation on; right after
the second it switches it off and asks for a dump, whose total is the op's count. The client
requests are inline machine code from ``<valgrind/callgrind.h>``; a ten-line C file
(``_callgrind.c``) wraps them as functions, compiled with the system's C compiler on first use
and called through ctypes. What the count includes:

- every thread of the process (callgrind runs them one at a time): aiosqlite's connection
  thread is counted with the event loop that waits for it;
- native code in the process: SQLite's C library, ObjectBox's C core, the drivers;
- not the kernel: time spent in system calls (fsync, reads) is invisible to it, which is why
  wall time stays the measure for what is I/O.

A constant few hundred instructions of the ctypes calls and clock reads are in every count.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Mapping

#: where the parent tells the child to look for its dumps (and that it runs under callgrind)
OUT_DIR_ENV = "PYTEST_ORMBENCH_CALLGRIND_DIR"
_SOURCE = Path(__file__).with_name("_callgrind.c")
HEADER = Path("/usr/include/valgrind/callgrind.h")
INSTALL_HINT = "install valgrind (Debian/Ubuntu: apt-get install valgrind; Fedora: dnf install valgrind-devel)"


#: what a measuring process under callgrind keeps of the parent's environment, and nothing else: a count
#: moves with the environment's size (one more 22-byte variable moved a cell by 0.77 %), and two CI jobs
#: differ in their runner's own variables (the event, the ref, a step's inputs). An arm's own settings
#: travel in ``ORMBENCH_*`` variables.
KEPT_ENV = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
                      "VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH", "LD_PRELOAD", "XDG_CACHE_HOME", "SSL_CERT_FILE",
                      "SSL_CERT_DIR", "DJANGO_SETTINGS_MODULE"})
KEPT_PREFIXES = ("PYTHON", "LC_", "ORMBENCH_", "PYTEST_ORMBENCH_", "VALGRIND_", "PG", "MYSQL_", "MARIADB_")


def measuring_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without what is not :data:`KEPT_ENV` or under :data:`KEPT_PREFIXES`, in a fixed order (sorted),
    so that two runs on one machine count in the same environment whatever else their shells or CI jobs set."""
    return {k: env[k] for k in sorted(env) if k in KEPT_ENV or k.startswith(KEPT_PREFIXES)}


class InstructionsUnavailable(RuntimeError):
    """valgrind, its header or a C compiler is missing: one line saying which, with the install hint."""


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    return None


def header_dir() -> Path | None:
    """The include directory that holds ``valgrind/callgrind.h`` (valgrind's own prefix first)."""
    candidates = []
    vg = shutil.which("valgrind")
    if vg:
        candidates.append(Path(vg).resolve().parent.parent / "include")
    candidates += [Path("/usr/include"), Path("/usr/local/include")]
    for inc in candidates:
        if (inc / "valgrind" / "callgrind.h").is_file():
            return inc
    return None


def check_available() -> str:
    """The valgrind executable; raises :class:`InstructionsUnavailable` naming what is missing."""
    vg = shutil.which("valgrind")
    if not vg:
        raise InstructionsUnavailable(f"--ormbench-instructions needs valgrind, which is not on PATH: {INSTALL_HINT}")
    if header_dir() is None:
        raise InstructionsUnavailable(f"--ormbench-instructions needs valgrind/callgrind.h, which is missing: "
                                      f"{INSTALL_HINT}")
    if _compiler() is None:
        raise InstructionsUnavailable("--ormbench-instructions needs a C compiler (cc) to build its ten-line "
                                      "callgrind shim: install one (Debian/Ubuntu: apt-get install gcc)")
    library()  # build it once in the parent, so that no child has to
    return vg


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-ormbench"


def library() -> Path:
    """The compiled shim (built once per source version and Python, kept in the user's cache)."""
    inc = header_dir()
    if inc is None:
        raise InstructionsUnavailable(f"valgrind/callgrind.h is missing: {INSTALL_HINT}")
    digest = hashlib.sha256(_SOURCE.read_bytes() + str(inc).encode()).hexdigest()[:12]
    out = _cache_dir() / f"callgrind-{digest}.so"
    if out.is_file():
        return out
    cc = _compiler()
    if cc is None:
        raise InstructionsUnavailable("no C compiler (cc) to build the callgrind shim")
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".so")
    os.close(fd)
    proc = subprocess.run([cc, "-O1", "-shared", "-fPIC", f"-I{inc}", "-o", tmp, str(_SOURCE)],
                          capture_output=True, text=True)
    if proc.returncode:
        os.unlink(tmp)
        raise InstructionsUnavailable(f"building the callgrind shim failed: {proc.stderr.strip().splitlines()[-1:]}")
    os.replace(tmp, out)
    return out


def command(valgrind: str, out_dir: Path) -> list[str]:
    """The prefix that starts a worker under callgrind, counting nothing until asked."""
    return [valgrind, "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=yes",
            "--dump-instr=no", "--dump-line=no", "--compress-strings=no", "--compress-pos=no",
            "--callgrind-out-file=" + str(out_dir / "cg.%p"), "-q"]


def parse_total(text: str) -> int:
    """The Ir total of one callgrind dump (its ``totals:`` line, else ``summary:``)."""
    for prefix in ("totals:", "summary:"):
        for line in text.splitlines():
            if line.startswith(prefix):
                return int(line.split()[1])
    raise ValueError("no totals: or summary: line in the callgrind dump")


class Callgrind:
    """The child's side: switch counting on and off around the op, read each dump's total."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.lib = ctypes.CDLL(str(library()))
        self.lib.ormbench_dump.argtypes = [ctypes.c_char_p]
        if not self.lib.ormbench_on_valgrind():
            raise InstructionsUnavailable("instructions were asked, but this process is not running under valgrind")
        self._pid = os.getpid()
        self._start = self.lib.ormbench_start
        self._stop = self.lib.ormbench_stop

    @classmethod
    def from_environment(cls) -> "Callgrind | None":
        out = os.environ.get(OUT_DIR_ENV)
        return cls(Path(out)) if out else None

    def _dumps(self) -> set[Path]:
        return set(self.out_dir.glob(f"cg.{self._pid}.*"))

    def start(self) -> None:
        self._before = self._dumps()
        self._start()

    def stop(self) -> int:
        """Switch counting off and return the op's instructions."""
        self._stop()
        self.lib.ormbench_dump(b"op")
        new = sorted(self._dumps() - self._before, key=lambda p: int(p.suffix[1:]))
        if not new:
            raise RuntimeError(f"callgrind wrote no dump into {self.out_dir}")
        total = parse_total(new[-1].read_text())
        for p in new:
            p.unlink()
        return total


def main() -> int:  # pragma: no cover - a manual check: python -m pytest_ormbench.measuring.callgrind
    try:
        print(check_available(), library())
    except InstructionsUnavailable as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
