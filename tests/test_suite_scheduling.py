"""The suite's own scheduling (tests/conftest.py): modules are handed to xdist workers longest first, by
tests/durations.json, and a module (or the shipped-preview group) stays whole on one worker."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("xdist")

import conftest  # noqa: E402


class _Worker:
    """What the scheduler sends to one xdist worker (the test indexes of its collection)."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


class _Config:
    def __init__(self, rootpath: Path) -> None:
        self.rootpath = rootpath
        self.option = SimpleNamespace(loadscopereorder=True, numprocesses=2, tx=["2*popen"])

    def getoption(self, name: str, default: Any = None) -> Any:
        return "loadfile" if name == "dist" else default

    def getvalue(self, name: str) -> Any:
        return getattr(self.option, name)


def _scheduler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, durations: str) -> Any:
    for name in ("test_many_fast.py", "test_slow.py", "test_new.py", "test_medium.py"):
        (tmp_path / name).write_text("def test(): pass\n")
    table = tmp_path / "durations.json"
    table.write_text(durations)
    monkeypatch.setattr(conftest, "DURATIONS", table)
    return conftest.pytest_xdist_make_scheduler(_Config(tmp_path), None)


COLLECTION = [
    *(f"test_many_fast.py::test_{i}" for i in range(30)),  # xdist's own order (most tests first) starts here
    "test_medium.py::test_a",
    "test_medium.py::test_b",
    "test_new.py::test_only",
    "test_slow.py::test_real_daemons",
]


def test_the_longest_modules_go_first_and_each_stays_on_one_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sched = _scheduler(tmp_path, monkeypatch, '{"test_many_fast.py": 3.0, "test_slow.py": 30.0, "test_medium.py": 8.0}')
    workers = [_Worker("gw0"), _Worker("gw1")]
    for w in workers:
        sched.add_node(w)
    for w in workers:
        sched.add_node_collection(w, COLLECTION)
    sched.schedule()
    first = [[COLLECTION[i] for i in w.sent[0]] for w in workers]
    assert first == [["test_slow.py::test_real_daemons"], ["test_medium.py::test_a", "test_medium.py::test_b"]]
    # Then the next longest: the unknown module at 0.2 s a test (0.2) comes after the listed 3 s one.
    sent = [COLLECTION[i] for w in workers for batch in w.sent for i in batch]
    assert sent.index("test_many_fast.py::test_0") < sent.index("test_new.py::test_only")
    assert sorted(sent) == sorted(COLLECTION)  # every test once


def test_without_a_table_the_default_per_test_orders_by_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sched = _scheduler(tmp_path, monkeypatch, "{}")
    worker = _Worker("gw0")
    sched.add_node(worker)
    sched.add_node(_Worker("gw1"))
    for w in list(sched.nodes):
        sched.add_node_collection(w, COLLECTION)
    sched.schedule()
    assert [COLLECTION[i] for i in worker.sent[0]] == [f"test_many_fast.py::test_{i}" for i in range(30)]
