"""``provision kubeconfig TARGET`` and ``provision k8s-launch TARGET -- SCRIPT ARGS`` (``scheduler: kubernetes``).

``k8s-launch`` builds a Kubeflow ``TrainJob`` for ``torchrun SCRIPT ARGS`` over the GPU pool (all GPUs and
fabric devices of each node, the fabric's NCCL environment, the cluster's queue) and submits it with
kubectl; ``--print`` only prints it. It is the ``--k8s`` path of ``provision launch``, which calls
:func:`provision.ops.k8s.launch` the same way. Registered by :mod:`provision.cli.app`.
"""

from __future__ import annotations

import typer

from provision.cli.common import JsonOpt, TargetArg, console, emit_json, run_command

_MOCK = typer.Option(False, "--mock", help="Use the mocked cloud with local state (~/.provision/mock).")


def kubeconfig(
    target: str = TargetArg,
    mock: bool = _MOCK,
    write: str = typer.Option(None, "--write", help="Write the kubeconfig to this file (mode 0600) instead."),
    as_json: bool = JsonOpt,
) -> None:
    """Print the kubeconfig of a scheduler: kubernetes cluster (auth via gcloud / aws CLI; no secret inside)."""

    def go() -> str:
        from provision.ops.cluster import Cluster
        from provision.ops.k8s import kubeconfig as read

        text = read(Cluster(target, mock=mock, display="none"))
        if write:
            import os
            from pathlib import Path

            path = Path(write).expanduser()
            path.write_text(text, encoding="utf-8")
            os.chmod(path, 0o600)
        return text

    text = run_command(as_json, go)
    if as_json:
        emit_json({"kubeconfig": text, "written_to": write})
    elif write:
        console(stderr=True).print(f"wrote {write}; use: export KUBECONFIG={write}")
    else:
        typer.echo(text, nl=False)


def k8s_launch(
    target: str = TargetArg,
    script: str = typer.Argument(..., help="The training script torchrun runs on every node."),
    args: list[str] = typer.Argument(None, help="Arguments of the script (after --)."),
    image: str = typer.Option(None, "--image", help="Training image (default: the cluster's default image)."),
    nodes: int = typer.Option(None, "--nodes", help="Nodes to use (default: the whole GPU pool)."),
    name: str = typer.Option(None, "--name", help="Job name (default: <cluster>-<timestamp>)."),
    print_only: bool = typer.Option(False, "--print", help="Print the TrainJob instead of submitting it."),
    workdir: str = typer.Option(
        None,
        "--workdir",
        help="A local folder (git-ignored files left out, at most 700 KiB packed) every pod gets at /workspace "
        "and starts in.",
    ),
    mock: bool = _MOCK,
    as_json: bool = JsonOpt,
) -> None:
    """Submit a Kubeflow TrainJob (torchrun SCRIPT ARGS on every GPU node) to a kubernetes cluster."""

    def go() -> dict[str, object]:
        from provision.ops.cluster import Cluster
        from provision.ops.k8s import launch

        cluster = Cluster(target, mock=mock, display="none")
        return launch(
            cluster, script, args or [], image=image, nodes=nodes, name=name, print_only=print_only, workdir=workdir
        )

    out = run_command(as_json, go)
    if as_json:
        emit_json({k: v for k, v in out.items() if k not in ("yaml", "objects")} | _objects(out))
        return
    typer.echo(str(out["yaml"]), nl=False)
    err = console(stderr=True)
    if out["submitted"]:
        from provision.ops.k8s import JOB_ID_LABEL

        job_id = out["job"]["metadata"]["labels"][JOB_ID_LABEL]  # type: ignore[index]
        err.print(f"submitted: {out['kubectl']}; job {job_id} (provision jobs / logs / cancel {target})", markup=False)
    elif not print_only:
        err.print("mocked cluster: the job was built but not submitted")


def _objects(out: dict[str, object]) -> dict[str, object]:
    """The objects applied with the job, named (the workdir's ConfigMap: its size, not its bytes)."""
    objects = out.get("objects") or []
    return {"objects": [f"{o['kind']}/{o['metadata']['name']}" for o in objects]}  # type: ignore[attr-defined]


def register(app: typer.Typer) -> None:
    """Add ``kubeconfig`` and ``k8s-launch`` to the ``provision`` app."""
    app.command("kubeconfig")(kubeconfig)
    app.command("k8s-launch")(k8s_launch)
