"""``provision jobs | logs | cancel``: the jobs ``launch --detach`` started, read from the nodes.

provision launch llm-train --torchrun --detach -- train.py    # prints the job id
provision jobs llm-train                                      # state, start, duration, exit code per rank
provision logs llm-train JOB --rank 1 -f                      # one rank's log, followed
provision cancel llm-train JOB                                # stops every rank
"""

from __future__ import annotations

import sys
import time
from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command

_TARGET = typer.Argument(
    ..., help="A cluster or stack name (after up), or a spec / stack YAML file.", show_default=False
)
_MOCK = typer.Option(False, "--mock", help="The mocked cluster: its nodes are local process trees.")


def _cluster(target: str, mock: bool) -> Any:
    from provision.ops.cluster import Cluster

    return Cluster(target, mock=mock, display="none")


def _when(epoch: float | None) -> str:
    if not epoch:
        return "-"
    today = time.localtime().tm_yday == time.localtime(epoch).tm_yday
    return time.strftime("%H:%M:%S" if today else "%m-%d %H:%M", time.localtime(epoch))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _exits(job: Any) -> str:
    """``0:0 1:137`` (rank:code); ``all 0`` when every rank of a larger job has the same code."""
    codes = ["-" if r.exit_code is None else str(r.exit_code) for r in job.ranks]
    if len(codes) > 2 and len(set(codes)) == 1:
        return f"all {codes[0]}"
    return " ".join(f"{r.rank}:{c}" for r, c in zip(job.ranks, codes, strict=True))


def _resume_lost(cluster: Any, found: list[Any] | None = None) -> int:
    """Resume the ranks lost with a replaced node (on stderr: which); how many."""
    from provision.ops.jobs.recover import recover

    resumed = recover(cluster, found)
    for r in resumed:
        console(stderr=True).print(
            f"job {r.job_id}: rank {r.rank} was lost with its node; "
            + (f"not resumed yet ({r.error})" if r.error else f"resumed on the node now there (restart {r.restart})"),
            markup=False,
        )
    return sum(1 for r in resumed if r.error is None)


def jobs(target: str = _TARGET, mock: bool = _MOCK, as_json: bool = JsonOpt) -> None:
    """List the cluster's jobs, newest first: state, start, duration, restarts, exit code per rank (RANK:CODE) and
    what runs (a generated script is named, not printed)."""

    def go() -> list[Any]:
        from provision.ops import jobs as ops_jobs

        cluster = _cluster(target, mock)
        found = ops_jobs.list_jobs(cluster)
        return ops_jobs.list_jobs(cluster) if _resume_lost(cluster, found) else found

    found = run_command(as_json, go)
    if as_json:
        emit_json({"jobs": [j.as_dict() for j in found]})
        return
    if not found:
        console().print("no jobs yet; start one with provision launch TARGET --detach ...", markup=False)
        return
    from rich.table import Table

    from provision.ops.jobs.model import summary

    names = ("job", "state", "started", "took", "restarts", "exits", "command")
    rows = [
        (j.spec.id, j.state, _when(j.started), _duration(j.duration()), str(sum(x.restarts for x in j.ranks)))
        + (_exits(j),)
        for j in found
    ]
    table = Table(box=None, pad_edge=False)
    for i, name in enumerate(names[:-1]):  # these keep their width; the command takes what is left, then an ellipsis
        table.add_column(name, no_wrap=True, min_width=max(len(name), *(len(r[i]) for r in rows)))
    table.add_column("command", no_wrap=True, overflow="ellipsis")
    for j, row in zip(found, rows, strict=True):
        table.add_row(*row, summary(j.spec))
    console().print(table)


def logs(
    target: str = _TARGET,
    job: str | None = typer.Argument(None, help="The job id (or a unique prefix); default: the newest job."),
    rank: int | None = typer.Option(None, "--rank", min=0, help="Only this rank (default: every rank, prefixed)."),
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing until the job's ranks stop."),
    tail: int | None = typer.Option(None, "--tail", "-n", min=0, help="Start with the last N lines of each rank."),
    mock: bool = _MOCK,
) -> None:
    """Print (or follow) a job's per-rank logs; they stay on the nodes, so this works after a reconnect."""

    def go() -> Any:
        from provision.ops import jobs as ops_jobs

        prefix = rank is None

        def show(r: int, line: str) -> None:
            sys.stdout.write(f"[rank {r}] {line}\n" if prefix else f"{line}\n")
            sys.stdout.flush()

        return ops_jobs.logs(_cluster(target, mock), job, show, rank=rank, follow=follow, tail=tail)

    run_command(False, go)


def cancel(
    target: str = _TARGET,
    job: str = typer.Argument(..., help="The job id (or a unique prefix)."),
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Stop every rank of a job (and every process it started)."""

    def go() -> Any:
        from provision.ops import jobs as ops_jobs

        return ops_jobs.cancel(_cluster(target, mock), job)

    done = run_command(as_json, go)
    if as_json:
        emit_json(done.as_dict())
    else:
        console().print(f"job {done.spec.id}: {done.state}", markup=False)


def register(app: typer.Typer) -> None:
    """Add ``jobs``, ``logs``, ``cancel`` and ``top``."""
    app.command("jobs")(jobs)
    app.command("logs")(logs)
    app.command("cancel")(cancel)
    app.command("top")(top)


def _top_table(doc: dict[str, Any]) -> Any:
    from rich.table import Table

    from provision.ops.top import rows

    job = doc.get("job")
    title = f"{doc['cluster']}: " + (
        f"job {job['id']} {job['state']} ({_duration(job['duration_s'])}, {job.get('restarts', 0)} restarts)"
        if job
        else "no job"
    )
    table = Table(title=title, box=None, pad_edge=False)
    for name in ("node", "gpus", "util", "memory", "power", "temp", "fabric rx/tx"):
        table.add_column(name, no_wrap=True)
    for row in rows(doc):
        table.add_row(*row)
    if not job or not job.get("last_line"):
        return table
    from rich.console import Group
    from rich.text import Text

    last = Text(f"last: {job['last_line']}", no_wrap=True, overflow="ellipsis")
    return Group(table, last)


def top(
    target: str = _TARGET,
    interval: float = typer.Option(5.0, "--interval", min=1, help="Seconds between samples."),
    once: bool = typer.Option(False, "--once", help="One sample, then exit."),
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Per node GPU utilisation, memory, power and temperature, and the newest job, refreshed (Ctrl-C ends it)."""
    from contextlib import ExitStack

    def runner(stack: ExitStack) -> tuple[Any, Any]:
        from provision.ops.acceptance import node_runner

        cluster = _cluster(target, mock)
        return cluster, stack.enter_context(node_runner(cluster, []))

    with ExitStack() as stack:
        cluster, run = run_command(as_json, lambda: runner(stack))
        from provision.ops.top import sample

        if as_json or once:
            doc = run_command(as_json, lambda: sample(cluster, run))
            if as_json:
                emit_json(doc)
            else:
                console().print(_top_table(doc))
            return
        from rich.live import Live

        try:
            from provision.ops.top import add_rates

            doc = sample(cluster, run)
            with Live(_top_table(doc), console=console(), auto_refresh=False) as live:
                while True:
                    time.sleep(interval)
                    doc = add_rates(sample(cluster, run), doc)  # the fabric counters' change: a rate
                    live.update(_top_table(doc), refresh=True)
        except KeyboardInterrupt:
            return
