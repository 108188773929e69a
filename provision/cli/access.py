"""``provision ssh | exec | launch``: into the nodes, commands on them, and training launches.

    provision ssh llm-train                       # log into the head node (the cloud's private path)
    provision ssh llm-train 3 -- nvidia-smi       # one command on node 3
    provision exec llm-train -- hostname          # on every node, output prefixed by node
    provision launch llm-train --torchrun -- train.py --lr 3e-4

TARGET is a stack or cluster name known to the state, or a spec / stack file.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from typing import Any

import typer

from provision.cli.common import JsonOpt, console, emit_json, run_command

_TARGET = typer.Argument(
    ..., help="A cluster or stack name (after up), or a spec / stack YAML file.", show_default=False
)
_MOCK = typer.Option(False, "--mock", help="The mocked cluster: commands run locally, once per node, with its env.")
_ARGS = typer.Argument(None, help="After --: the command (ssh, exec) or the script and its arguments (launch).")
_TIMEOUT = typer.Option(None, "--timeout", min=1, help="Seconds each node may take (default: no limit).")

#: The local tool each private path runs as its ProxyCommand.
_TOOLS = {"ssm": ("aws", "session-manager-plugin"), "iap": ("gcloud",), "bastion": ("az",)}


def _cluster(target: str, mock: bool) -> Any:
    from provision.ops.cluster import Cluster

    return Cluster(target, mock=mock, display="none")


def _is_node(word: str, cluster: Any) -> bool:
    hosts = cluster.outputs.get("hosts") or []
    return bool(
        word.lower() == "head"
        or (word.isascii() and word.isdigit())
        or re.fullmatch(rf"{re.escape(cluster.spec.name)}-[0-9]+", word)
        or word in hosts
        or word.lower() in ("ctl", "controller", f"{cluster.spec.name}-ctl".lower())  # a Slurm controller
    )


def _print_line(result: Any, stream: str, line: str) -> None:
    out = sys.stderr if stream == "stderr" else sys.stdout
    out.write(f"[{result.node}] {line}\n")
    out.flush()


def _check_tools(via: str) -> None:
    from provision.planning.access import NEEDS
    from provision.spec.errors import CloudError

    missing = [t for t in _TOOLS.get(via, ()) if shutil.which(t) is None]
    if shutil.which("ssh") is None:
        missing.insert(0, "ssh")
    if missing:
        raise CloudError(
            f"this cluster is reached through {via}, which needs {', '.join(missing)} on this machine. "
            f"To fix: install {NEEDS.get(via, 'an OpenSSH client')}"
        )


def ssh(
    target: str = _TARGET,
    args: list[str] = _ARGS,
    print_only: bool = typer.Option(False, "--print", help="Print the ssh command line instead of running it."),
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Log into a node (default: the head node) through the cloud's private path, or run one command there.

    NODE (before --) is a rank, `head`, the node's name or its private IP.
    """

    def go() -> dict[str, Any]:
        from provision.ops import access

        cluster = _cluster(target, mock)
        words = list(args or [])
        node = words.pop(0) if words and _is_node(words[0], cluster) else None
        argv = access.ssh_argv(cluster, node, words or None)
        way = access.way_in(cluster)
        return {"cluster": cluster, "argv": argv, "node": access.node_alias(cluster, node), "command": words, **way}

    found = run_command(as_json, go)
    cluster = found.pop("cluster")
    import shlex

    line = shlex.join(found["argv"])
    if print_only or as_json:
        if as_json:
            emit_json({**found, "line": line, "mock": cluster.mock})
        else:
            print(line)
        return
    if cluster.mock:
        if not found["command"]:
            console().print(
                f"a mocked cluster has no node to log into; on a real one this runs:\n  {line}", markup=False
            )
            return
        from provision.ops import access as access_ops
        from provision.ops.exec import run_on_nodes

        rank = int(found["node"].rsplit("-", 1)[1])
        remote = access_ops.remote_command(found["command"])  # the string a real node's shell gets
        results = run_command(False, lambda: run_on_nodes(cluster, remote, nodes=[rank]))
        sys.stdout.write(results[0].stdout)
        sys.stderr.write(results[0].stderr)
        raise typer.Exit(results[0].exit_code)
    run_command(False, lambda: _check_tools(found["via"]))
    sys.stdout.flush()
    os.execvp(found["argv"][0], found["argv"])  # noqa: S606  # replaces this process: the user's ssh session


def exec_(
    target: str = _TARGET,
    args: list[str] = _ARGS,
    nodes: str = typer.Option("all", "--nodes", help="all, head, or ranks such as 0,2 (case-insensitive)."),
    timeout: float | None = _TIMEOUT,
    fanout: int = typer.Option(32, "--fanout", min=1, help="Nodes at once."),
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Run a command on the chosen nodes in parallel; output is prefixed by node, the exit code is the worst node's."""
    if not args:
        run_command(as_json, _no_command)

    def go() -> list[Any]:
        from provision.ops.exec import run_on_nodes

        cluster = _cluster(target, mock)
        if not cluster.mock:
            from provision.ops import access

            _check_tools(access.way_in(cluster)["via"])
        import shlex

        return run_on_nodes(
            cluster,
            shlex.join(args),
            nodes=nodes,
            timeout=timeout,
            fanout=fanout,
            on_line=None if as_json else _print_line,
        )

    results = run_command(as_json, go)
    from provision.ops.exec import worst_exit

    code = worst_exit(results)
    if as_json:
        emit_json({"exit_code": code, "nodes": [r.as_dict() for r in results]})
    else:
        for r in results:
            if r.error:
                console(stderr=True).print(f"[{r.node}] error: {r.error}", markup=False)
        failed = [r.node for r in results if not r.ok]
        if failed:
            console(stderr=True).print(f"failed on {len(failed)} of {len(results)} nodes: {', '.join(failed)}")
    raise typer.Exit(code)


def _no_command() -> None:
    from provision.spec.errors import Problem, SpecError

    raise SpecError(problems=[Problem("CMD", "", "is missing", "put the command after --, e.g. -- hostname")])


def launch(
    target: str = _TARGET,
    args: list[str] = _ARGS,
    torchrun: bool = typer.Option(False, "--torchrun", help="torchrun on every node (static rendezvous on node 0)."),
    deepspeed: bool = typer.Option(False, "--deepspeed", help="deepspeed (pdsh) from the head node."),
    mpirun: bool = typer.Option(False, "--mpirun", help="mpirun from the head node with the fabric's settings."),
    accelerate: bool = typer.Option(False, "--accelerate", help="accelerate launch on every node."),
    k8s: bool = typer.Option(False, "--k8s", help="Submit a training job (scheduler: kubernetes clusters)."),
    cmd: bool = typer.Option(False, "--cmd", help="Run the words after -- as they are on every node (env sourced)."),
    detach: bool = typer.Option(
        False, "--detach", "-d", help="Start a job under the nodes' supervisor and return its id at once."
    ),
    max_restarts: int = typer.Option(0, "--max-restarts", min=0, help="--detach: restart a failed rank N times."),
    checkpoint_dir: str | None = typer.Option(
        None,
        "--checkpoint-dir",
        help="--detach: a restarted rank gets this folder's newest entry as $PROVISION_RESUME_FROM "
        "(default: $PROVISION_CHECKPOINT_DIR, the shared filesystem's checkpoints/CLUSTER).",
    ),
    workdir: str | None = typer.Option(
        None, "--workdir", help="Sync this local folder to the cluster (git-ignored files left out) and start there."
    ),
    print_only: bool = typer.Option(False, "--print", help="Print the launch line instead of running it."),
    timeout: float | None = _TIMEOUT,
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Launch SCRIPT ARGS with the launcher line that fits the cluster's size and fabric."""
    chosen = [
        k
        for k, on in (
            ("torchrun", torchrun),
            ("deepspeed", deepspeed),
            ("mpirun", mpirun),
            ("accelerate", accelerate),
            ("k8s", k8s),
            ("cmd", cmd),
        )
        if on
    ]
    words = list(args or [])

    def check() -> str:
        from provision.spec.errors import Problem, SpecError

        problems = []
        if len(chosen) != 1:
            problems.append(
                Problem(
                    "launcher",
                    ", ".join(chosen) or "(none)",
                    "must be exactly one",
                    "keep one of --torchrun, --deepspeed, --mpirun, --accelerate, --k8s, --cmd",
                )
            )
        if not words:
            problems.append(Problem("SCRIPT", "", "is missing", "put the script after --, e.g. -- train.py --lr 3e-4"))
        if (max_restarts or checkpoint_dir) and not detach:
            problems.append(
                Problem(
                    "--max-restarts", max_restarts, "needs --detach (restarts are the supervisor's)", "add --detach"
                )
            )
        if problems:
            raise SpecError(problems=problems)
        return chosen[0]

    kind = run_command(as_json, check)
    if kind == "k8s" and not print_only and detach:
        _launch_detached(target, kind, words, mock, as_json, max_restarts, checkpoint_dir, workdir)
        return
    if kind == "k8s":
        _launch_k8s(target, words, print_only, mock, as_json, workdir)
        return

    if detach:
        _launch_detached(target, kind, words, mock, as_json, max_restarts, checkpoint_dir, workdir)
        return

    def plan() -> tuple[Any, dict[str, Any]]:
        cluster = _cluster(target, mock)
        from provision.ops.jobs import CMD, job_line
        from provision.ops.launch import launch_command

        if kind == CMD:
            line, ranks = job_line(cluster, kind, words)
            return cluster, {"kind": kind, "runs_on": "all", "nodes": [], "line": line}
        return cluster, launch_command(cluster, kind, words[0], *words[1:])

    cluster, command = run_command(as_json, plan)
    if print_only:
        if as_json:
            emit_json(command)
        else:
            where = "every node" if command["runs_on"] == "all" else f"the head node ({command['nodes'][0]})"
            print(f"# {command['kind']} on {where}")
            print(command["line"])
        return

    def go() -> list[Any]:
        from provision.ops.launch import launch as run_launch

        if not cluster.mock:
            from provision.ops import access

            _check_tools(access.way_in(cluster)["via"])
        if workdir:
            from provision.ops.workdir import sync

            synced = sync(cluster, workdir)
            _say_synced(synced, as_json)
            command["line"] = f"cd {_cd(synced.run_in)} && {command['line']}"
        if kind == "cmd" or workdir:
            from provision.ops.checkpoints import with_checkpoint_dir
            from provision.ops.exec import run_on_nodes
            from provision.ops.launch import ensure_prepared

            ensure_prepared(cluster)
            where = "all" if command["runs_on"] == "all" else "head"
            line = with_checkpoint_dir(cluster, command["line"])
            return run_on_nodes(cluster, line, nodes=where, on_line=None if as_json else _print_line, timeout=timeout)
        return run_launch(cluster, kind, words[0], words[1:], on_line=None if as_json else _print_line, timeout=timeout)

    results = run_command(as_json, go)
    from provision.ops.exec import worst_exit

    code = worst_exit(results)
    if as_json:
        emit_json({**command, "exit_code": code, "nodes": [r.as_dict() for r in results]})
    raise typer.Exit(code)


def _cd(path: str) -> str:
    import shlex

    return f'"$HOME"/{shlex.quote(path[2:])}' if path.startswith("~/") else shlex.quote(path)


def _say_synced(synced: Any, as_json: bool) -> None:
    if not as_json:
        console(stderr=True).print(
            f"workdir: {synced.copied} of {synced.files} files sent to {synced.destination}", markup=False
        )


def _launch_detached(
    target: str,
    kind: str,
    words: list[str],
    mock: bool,
    as_json: bool,
    max_restarts: int,
    checkpoint_dir: str | None,
    workdir: str | None,
) -> None:
    def go() -> dict[str, Any]:
        from provision.ops import jobs

        cluster = _cluster(target, mock)
        jobs.backend(cluster)
        kube = cluster.spec.scheduler.kind == "kubernetes"  # a TrainJob: the local workdir goes with it
        synced = None
        if workdir and not kube:
            from provision.ops.workdir import sync

            synced = sync(cluster, workdir)
            _say_synced(synced, as_json)
        spec = jobs.submit(
            cluster,
            kind,
            words,
            max_restarts=max_restarts,
            checkpoint_dir=checkpoint_dir,
            workdir=workdir if kube else synced.run_in if synced else None,
        )
        return {
            "job": spec.id,
            "cluster": spec.cluster,
            "kind": spec.kind,
            "ranks": list(spec.ranks),
            "workdir": synced.as_dict() if synced else None,
            "stack": cluster.stack,
            "mock": cluster.mock,
        }

    found = run_command(as_json, go)
    if as_json:
        emit_json(found)
        return
    mock_flag = " --mock" if found["mock"] else ""
    print(found["job"])
    console(stderr=True).print(
        f"job {found['job']} started on {len(found['ranks'])} node(s). Follow it: "
        f"provision logs {found['stack']} {found['job']} -f{mock_flag}",
        markup=False,
    )


def _launch_k8s(
    target: str, words: list[str], print_only: bool, mock: bool, as_json: bool, workdir: str | None = None
) -> None:
    def go() -> Any:
        import importlib

        from provision.spec.errors import UnsupportedError

        try:
            k8s = importlib.import_module("provision.ops.k8s")
        except ImportError:
            raise UnsupportedError(
                "launch --k8s needs a cluster with scheduler: kubernetes, which this installation does not support"
            ) from None
        return k8s.launch(_cluster(target, mock), words[0], words[1:], print_only=print_only, workdir=workdir)

    doc = run_command(as_json, go)
    if as_json:
        emit_json(doc)
    elif doc is not None:
        print(doc["yaml"] if isinstance(doc, dict) and "yaml" in doc else doc)  # the objects, as kubectl reads them


def azure_bastion(
    name: str = typer.Option(..., "--name", help="The Bastion's name."),
    resource_group: str = typer.Option(..., "--resource-group", help="Its resource group."),
    host: str = typer.Option(..., "--host", help="The node: private IP or computer name (ssh's %h)."),
    port: int = typer.Option(22, "--port", help="The node's SSH port (ssh's %p)."),
    scale_set: list[str] = typer.Option([], "--scale-set", help="Scale sets to look a computer name up in."),
) -> None:
    """ssh ProxyCommand through Azure Bastion (written into a cluster's ssh_config by azure.bastion)."""
    from provision.ops.proxy import azure_bastion as relay

    raise typer.Exit(run_command(False, lambda: relay(name, resource_group, host, port, scale_set)))


def register(app: typer.Typer) -> None:
    """Add ``ssh``, ``exec``, ``launch`` and the hidden ``proxy`` group (ssh ProxyCommands)."""
    app.command("ssh")(ssh)
    app.command("exec")(exec_)
    app.command("launch")(launch)
    proxy = typer.Typer(help="ssh ProxyCommands used by generated ssh_config files.")
    proxy.command("azure-bastion")(azure_bastion)
    app.add_typer(proxy, name="proxy", hidden=True)
