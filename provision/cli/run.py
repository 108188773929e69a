"""``provision run TARGET [--max-usd N] [--ttl 2h] [--mock] [--on-cluster] -- CMD``: an ephemeral cluster for CMD.

Prices first and refuses over the cap (exit 3) before anything exists; brings the cluster up;
runs CMD locally with the cluster's outputs in its environment (``PROVISION_HOSTFILE``,
``PROVISION_SSH_CONFIG``, ``PROVISION_OUTPUTS``, ...) or, with ``--on-cluster``, on the nodes;
with ``--restart-on-interruption N`` runs it again (at most N times) after a node was lost;
with ``--save-checkpoint`` copies the newest checkpoint to the linked bucket before the teardown;
exits with CMD's exit code; always tears the cluster down (Ctrl-C and SIGTERM too: exit 130).
"""

from __future__ import annotations

import sys

import typer

from provision.cli.common import run_command


def run(
    target: str = typer.Argument(..., help="A stack name or a spec / stack YAML file.", show_default=False),
    args: list[str] = typer.Argument(None, help="After --: the command to run."),
    max_usd: float | None = typer.Option(None, "--max-usd", min=0.01, help="Cost cap for the whole lifetime (USD)."),
    ttl: str | None = typer.Option(None, "--ttl", help="Lifetime, e.g. 2h (the cloud deletes the nodes after it)."),
    on_cluster: bool = typer.Option(False, "--on-cluster", help="Run CMD on the nodes (over SSH) instead of here."),
    nodes: str = typer.Option("all", "--nodes", help="With --on-cluster: all, head, or ranks such as 0,2."),
    mock: bool = typer.Option(False, "--mock", help="Use the mocked cloud (no spend, no credentials)."),
    restart_on_interruption: int = typer.Option(
        0,
        "--restart-on-interruption",
        min=0,
        metavar="N",
        help="When CMD fails because a node was preempted or replaced: bring the cluster back and run CMD again, "
        "at most N times (CMD sees PROVISION_RESTART_COUNT; resume from your checkpoints).",
    ),
    save_checkpoint: bool = typer.Option(
        False,
        "--save-checkpoint",
        help="Before the teardown, copy the newest entry of $PROVISION_CHECKPOINT_DIR into the folder the "
        "shared filesystem exports to its bucket (storage.shared.object_store.export_path).",
    ),
) -> None:
    """Bring up a bounded cluster, run CMD, pass its exit code through, and always tear the cluster down."""
    from provision.cli.access import _print_line

    words = list(args or [])
    if not words:
        from provision.cli.access import _no_command

        run_command(False, _no_command)

    def say(text: str) -> None:
        print(f"provision: {text}", file=sys.stderr, flush=True)

    def go() -> int:
        from provision.ops.run import run as run_ephemeral

        return run_ephemeral(
            target,
            words,
            max_usd=max_usd,
            ttl=ttl,
            mock=mock,
            on_cluster=on_cluster,
            nodes=nodes,
            display="plain",
            on_line=_print_line,
            announce=say,
            restart_on_interruption=restart_on_interruption,
            save_checkpoint=save_checkpoint,
        )

    code = run_command(False, go)
    say(f"exit code {code}; the cluster was torn down")
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``run``."""
    app.command("run")(run)
