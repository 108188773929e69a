"""What a rank runs, as text (pure): the rank script every backend runs, and the systemd unit of a VM node.

The **rank script** (``rank-R.sh`` in the job's folder) records the attempt (``started``, ``restarts``,
``pid``), exports the job's variables, changes to the work folder and runs the launch line; when the
line ends it writes ``exit`` (``CODE EPOCH``). A restarted attempt gets ``PROVISION_RESTART_COUNT`` and,
when the job names a checkpoint folder, ``PROVISION_RESUME_FROM``: its newest entry.

The **systemd unit** (``provision-job-ID.service``, one per node) runs the rank script as the login user,
appends its output to ``rank-R.log`` and restarts it on failure at most ``max_restarts`` times
(``Restart=on-failure`` with a start limit of ``max_restarts + 1`` starts); stopping the unit stops
every process of the rank (``KillMode=control-group``). See systemd.service(5), systemd.exec(5) and
systemd.unit(5) (https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html).
"""

from __future__ import annotations

import shlex

from provision.ops.checkpoints import resume_lines
from provision.ops.jobs.model import JobSpec

#: Seconds systemd (and the mock's supervisor) waits before restarting a failed rank.
RESTART_SEC = 5
#: Seconds a stopped rank gets between SIGTERM and SIGKILL (enough for a checkpoint flush to be cut short
#: cleanly; systemd's default is 90 s).
STOP_TIMEOUT_SEC = 30


def rank_script(spec: JobSpec, rank: int, job_dir: str) -> str:
    """The bash script rank ``rank`` of ``spec`` runs (its output goes to ``rank-R.log``)."""
    d = shlex.quote(job_dir)
    r = str(rank)
    if spec.workdir and spec.workdir.startswith("~/"):
        workdir = f'cd "$HOME"/{shlex.quote(spec.workdir[2:])} || exit 1'
    elif spec.workdir:
        workdir = f"cd {shlex.quote(spec.workdir)} || exit 1"
    else:
        workdir = 'cd "$HOME" 2>/dev/null || true'
    resume = resume_lines(spec.checkpoint_dir) if spec.checkpoint_dir else ""
    return (
        "#!/bin/bash\n"
        f"# provision job {spec.id}, rank {r} ({spec.kind}); written by `provision launch --detach`.\n"
        f"D={d}\n"
        f'n=$(( $(cat "$D/rank-{r}.restarts" 2>/dev/null || echo -1) + 1 ))\n'
        f'echo "$n" > "$D/rank-{r}.restarts"\n'
        f'rm -f "$D/rank-{r}.exit"\n'
        f'date +%s.%N > "$D/rank-{r}.started"\n'
        f'echo "== provision: job {spec.id} rank {r} attempt $((n + 1)) on $(hostname) at $(date -u +%FT%TZ)"\n'
        f"export PROVISION_JOB_ID={shlex.quote(spec.id)} PROVISION_JOB_RANK={r} PROVISION_RESTART_COUNT=$n\n"
        f"{resume}"
        f"{workdir}\n"
        f"bash -c {shlex.quote(spec.line)} &\n"
        "child=$!\n"
        f'echo "$child" > "$D/rank-{r}.pid"\n'
        "trap 'kill -TERM \"$child\" 2>/dev/null' TERM INT\n"
        'wait "$child"; rc=$?\n'
        f'echo "$rc $(date +%s.%N)" > "$D/rank-{r}.exit"\n'
        'exit "$rc"\n'
    )


def _systemd_quote(text: str) -> str:
    """One ExecStart argument: double-quoted, with backslashes, quotes, ``$`` and ``%`` escaped (systemd.service(5),
    "Command lines"; systemd.unit(5), "Specifiers")."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$").replace("%", "%%")
    return f'"{escaped}"'


def unit_text(spec: JobSpec, rank: int, job_dir: str, user: str | None, setup: str | None = None) -> str:
    """The systemd service unit of rank ``rank`` on its node (``/run/systemd/system/provision-job-ID.service``).

    ``user``: who the rank runs as (``None``: root, as a job container needs for ``docker run``). ``setup``: the
    runtime's once-per-node preparation (idempotent), run as root before every start (``ExecStartPre=+``).
    Runtime units (``/run``) are gone after a reboot, as the job's processes are: the job's files stay.
    """
    restart = f"Restart=on-failure\nRestartSec={RESTART_SEC}\n" if spec.max_restarts > 0 else "Restart=no\n"
    user_line = f"User={user}\n" if user else ""
    setup_line = f"ExecStartPre=+/bin/bash -c {_systemd_quote(setup)}\n" if setup else ""
    return (
        "[Unit]\n"
        f"Description=provision job {spec.id} rank {rank} ({spec.kind})\n"
        "Wants=network-online.target\n"
        "After=network-online.target remote-fs.target\n"
        # At most max_restarts restarts: max_restarts + 1 starts within a window longer than any job.
        "StartLimitIntervalSec=365d\n"
        f"StartLimitBurst={spec.max_restarts + 1}\n"
        "\n"
        "[Service]\n"
        "Type=exec\n"
        f"{user_line}{setup_line}"
        f"ExecStart=/bin/bash {job_dir}/rank-{rank}.sh\n"
        f"StandardOutput=append:{job_dir}/rank-{rank}.log\n"
        "StandardError=inherit\n"
        f"{restart}"
        "KillMode=control-group\n"
        f"TimeoutStopSec={STOP_TIMEOUT_SEC}\n"
        # NCCL over EFA / InfiniBand registers (pins) GPU buffers: no locked-memory limit.
        "LimitMEMLOCK=infinity\n"
        "LimitNOFILE=1048576\n"
    )
