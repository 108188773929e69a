"""What a job is: its spec (what runs where), and each rank's state as its files on the node record it.

Every backend keeps the same files per job, in the job's folder on the node (or on the shared
filesystem): ``job.json`` (the :class:`JobSpec`), and per rank ``rank-R.sh`` (what runs),
``rank-R.log`` (its output), ``rank-R.started`` (epoch seconds of the last attempt's start),
``rank-R.pid`` (the command's pid), ``rank-R.restarts`` (attempts so far minus one) and
``rank-R.exit`` (``CODE EPOCH`` when an attempt ended); ``cancelled`` marks a cancelled job.
The process supervisor (systemd on VMs, the mock's local supervisor) says whether a rank is still
alive; :func:`rank_status` turns both into a state.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

JobState = Literal["pending", "running", "succeeded", "failed", "cancelled"]
STATES: tuple[JobState, ...] = ("pending", "running", "succeeded", "failed", "cancelled")
#: Per-rank files read back for a status (small ones only; the log is read by ``logs``).
STATUS_FILES = ("started", "pid", "restarts", "exit")


def new_job_id(now: float | None = None) -> str:
    """A short id that sorts by submission time: ``MMDD-HHMMSS-xxxx`` (UTC; 4 random hex digits)."""
    stamp = time.strftime("%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(2)}"


def unit_name(job_id: str) -> str:
    """The job's systemd unit on every node it runs on (one rank per node)."""
    return f"provision-job-{job_id}.service"


@dataclass(frozen=True)
class JobSpec:
    """A submitted job.

    Attributes:
        id: the job id (:func:`new_job_id`).
        cluster: the cluster's name.
        kind: the launcher (``torchrun``, ``deepspeed``, ``mpirun``, ``accelerate``) or ``cmd``.
        line: the shell line each rank runs.
        ranks: the node ranks it runs on (``deepspeed`` / ``mpirun``: the head node only).
        command: what the user typed after ``--`` (for display).
        max_restarts: how often a failed rank is restarted (0: never).
        checkpoint_dir: the folder whose newest entry a restarted rank resumes from
            (``$PROVISION_RESUME_FROM``), or ``None``.
        workdir: the folder the ranks start in (where ``--workdir`` was synced), or ``None``: the home folder.
        created: epoch seconds of the submission.
        label: what the job is, in words, when its command is not (e.g. ``bench: 7B, 20 steps``); ``None``:
            :func:`summary` shortens the command.
    """

    id: str
    cluster: str
    kind: str
    line: str
    ranks: tuple[int, ...]
    command: tuple[str, ...] = ()
    max_restarts: int = 0
    checkpoint_dir: str | None = None
    workdir: str | None = None
    created: float = field(default_factory=time.time)
    label: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> JobSpec:
        data = json.loads(text)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["ranks"] = tuple(known.get("ranks") or ())
        known["command"] = tuple(known.get("command") or ())
        return cls(**known)


@dataclass(frozen=True)
class RankStatus:
    """One rank of a job: its state, attempt times, exit code and restarts."""

    rank: int
    state: JobState
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    restarts: int = 0
    pid: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _number(text: str | None) -> float | None:
    try:
        return float((text or "").split()[0])
    except (ValueError, IndexError):
        return None


def rank_status(rank: int, files: Mapping[str, str], *, alive: bool, cancelled: bool) -> RankStatus:
    """A rank's state from its files (``started``, ``pid``, ``restarts``, ``exit``) and whether its
    supervisor still runs it (or will restart it).

    * alive: ``running`` once an attempt started, else ``pending``;
    * not alive: ``cancelled`` when the job was cancelled; else ``succeeded`` / ``failed`` by the last
      attempt's exit code; ``failed`` without one (the node or its supervisor lost the rank).
    """
    started = _number(files.get("started"))
    restarts = int(_number(files.get("restarts")) or 0)
    pid_number = _number(files.get("pid"))
    pid = int(pid_number) if pid_number is not None else None
    exit_words = (files.get("exit") or "").split()
    code = int(exit_words[0]) if exit_words and exit_words[0].lstrip("-").isdigit() else None
    ended = _number(exit_words[1]) if len(exit_words) > 1 else None
    if alive:
        state: JobState = "running" if started is not None else "pending"
        return RankStatus(rank, state, started, None, None, restarts, pid)
    state = "cancelled" if cancelled else "succeeded" if code == 0 else "failed"
    return RankStatus(rank, state, started, ended, code, restarts, pid)


@dataclass(frozen=True)
class JobStatus:
    """A job and its ranks' states; the job's state is the ranks' summed up."""

    spec: JobSpec
    ranks: tuple[RankStatus, ...]

    @property
    def state(self) -> JobState:
        """``running`` while any rank runs (``pending`` before any started); then ``cancelled``, ``failed``
        or ``succeeded`` (every rank exited 0)."""
        states = {r.state for r in self.ranks}
        if "running" in states:
            return "running"
        if "pending" in states:
            return "pending"
        for s in ("cancelled", "failed"):
            if s in states:
                return s  # type: ignore[return-value]
        return "succeeded"

    @property
    def started(self) -> float | None:
        times = [r.started for r in self.ranks if r.started is not None]
        return min(times) if times else None

    def duration(self, now: float | None = None) -> float | None:
        """Seconds from the first rank's start to the last rank's end (or to now while running)."""
        if self.started is None:
            return None
        if self.state in ("running", "pending"):
            end = time.time() if now is None else now
        else:
            ends = [r.ended for r in self.ranks if r.ended is not None]
            end = max(ends) if ends else self.started
        return max(0.0, end - self.started)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.spec.id,
            "cluster": self.spec.cluster,
            "kind": self.spec.kind,
            "command": list(self.spec.command),
            "summary": summary(self.spec),
            "state": self.state,
            "created": self.spec.created,
            "started": self.started,
            "duration_s": None if self.duration() is None else round(self.duration() or 0.0, 3),
            "max_restarts": self.spec.max_restarts,
            "ranks": [r.as_dict() for r in self.ranks],
        }


#: A run of base64 (or hex) this long is a blob a command carries (a script written on the node), not words.
_BLOB = re.compile(r"[A-Za-z0-9+/]{64,}={0,2}")
#: Characters :func:`summary` keeps of a command.
SUMMARY_CHARS = 72


def summary(spec: JobSpec, limit: int = SUMMARY_CHARS) -> str:
    """The job in one readable line: its label, else its command with blobs named by size
    (``echo <base64, 8.1 kB> | base64 -d > ...``), whitespace collapsed, cut at ``limit`` characters."""
    if spec.label:
        text = spec.label
    else:
        words = spec.command[0] if len(spec.command) == 1 else " ".join(spec.command)
        text = _BLOB.sub(lambda m: f"<base64, {len(m.group()) * 3 / 4 / 1000:.1f} kB>", words)
        text = " ".join(text.split())
        if spec.kind not in ("cmd", ""):
            text = f"{spec.kind} {text}"
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def sort_jobs(jobs: Sequence[JobStatus]) -> list[JobStatus]:
    """Newest first."""
    return sorted(jobs, key=lambda j: (j.spec.created, j.spec.id), reverse=True)
