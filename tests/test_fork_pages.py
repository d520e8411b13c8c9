"""A forked cold round's child makes the pages it shares with its parent its own before anything is timed
(issue 33): otherwise its first write to each costs a copy-on-write fault inside the timed region, which a
fresh interpreter never pays (SA ORM's forked cold rounds were 4 % slower before)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from pytest_ormbench.measuring import worker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not os.path.exists("/proc/self/smaps_rollup"),
                                reason="needs Linux's /proc/self/smaps_rollup")


def _dirty_kb() -> dict[str, int]:
    with open("/proc/self/smaps_rollup", encoding="ascii") as f:
        return {line.split(":")[0]: int(line.split()[1]) for line in f if line.startswith(("Shared_Dirty", "Private_Dirty"))}


def _in_child(populate: bool) -> dict[str, int] | str:
    """The child's dirty pages (kB), shared and private, after populating them or not."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            done = worker._populate_private_pages() if populate else True
            text = json.dumps(_dirty_kb()) if done else "unsupported"
        except BaseException as exc:  # noqa: BLE001
            text = repr(exc)
        os.write(write_end, text.encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return text if text == "unsupported" or not text.startswith("{") else json.loads(text)


def test_a_forked_child_owns_its_pages_before_anything_is_timed() -> None:
    ballast = [bytearray(4096) for _ in range(20_000)]  # 80 MB of the parent's own dirty pages
    untouched, owned = _in_child(False), _in_child(True)
    if owned == "unsupported":
        pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14+)")
    assert isinstance(untouched, dict) and isinstance(owned, dict), (untouched, owned)
    # without it the child shares the parent's dirty pages; with it, they are the child's (a few stay shared:
    # the pages the kernel's own mappings hold, and what changed between listing the mappings and populating)
    assert untouched["Shared_Dirty"] > 60_000
    assert owned["Shared_Dirty"] < untouched["Shared_Dirty"] / 10
    assert owned["Private_Dirty"] > untouched["Private_Dirty"] + 60_000
    del ballast


def test_under_callgrind_the_child_copies_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Callgrind counts no kernel work: under it the copy would only cost time."""
    from pytest_ormbench.measuring.callgrind import OUT_DIR_ENV

    monkeypatch.setenv(OUT_DIR_ENV, "/nonexistent")
    monkeypatch.setattr(worker, "_populate_private_pages", lambda: pytest.fail("populated under callgrind"))
    worker._own_the_heap()
