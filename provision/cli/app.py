"""The ``provision`` command: the Typer app and the registration of every command module.

Every command takes ``--json`` and then prints one JSON document on stdout and nothing
else. Exit codes: 0 success, 2 the user's input is wrong, 3 refused by policy or budget,
1 anything else (130 when interrupted). User errors never print a traceback.

Command modules (``offers``, ``plan``, ``lifecycle``, ``nodes``, ``size``, ``reap``) each expose
``register(app)``; they import :mod:`provision.cli.common`, never this module.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

from provision.cli import (
    access,
    catalog,
    check,
    inventory,
    jobs,
    k8s,
    lifecycle,
    nodes,
    offers,
    plan,
    reap,
    run,
    setup,
    size,
    sshconfig,
    volumes,
)

#: The command groups, in the order ``provision --help`` lists them.
COMMAND_MODULES = (
    offers,
    plan,
    lifecycle,
    inventory,
    access,
    sshconfig,
    jobs,
    run,
    nodes,
    size,
    reap,
    catalog,
    k8s,
    setup,
    check,
    volumes,
)

#: One example per command, shown at the end of its ``--help`` (commands that bring their own keep theirs).
EXAMPLES = {
    "offers": "provision offers --gpu H100 --cloud gcp",
    "plan": "provision plan gcp-a3-64",
    "preview": "provision preview aws-p5-16 --json",
    "schema": "provision schema > cluster.schema.json",
    "up": "provision up my-cluster.yaml --mock --yes",
    "down": "provision down llm-train --yes",
    "status": "provision status llm-train",
    "outputs": "provision outputs llm-train hostfile",
    "list": "provision list --mock",
    "ssh": "provision ssh llm-train 1 -- nvidia-smi",
    "exec": "provision exec llm-train --nodes all -- hostname",
    "launch": "provision launch llm-train --torchrun -- train.py --lr 3e-4",
    "ssh-config": "provision ssh-config --install",
    "jobs": "provision jobs llm-train --json",
    "logs": "provision logs llm-train --rank 1 -f",
    "cancel": "provision cancel llm-train 1201-221530-a3f9",
    "top": "provision top llm-train --interval 10",
    "run": "provision run aws-p5-ci --max-usd 300 --ttl 2h -- pytest tests/multinode",
    "size": "provision size --params 70B --tokens 2T",
    "reap": "provision reap --yes",
    "install-pulumi": "provision install-pulumi",
    "health": "provision health llm-train --json",
    "nccl-test": "provision nccl-test llm-train",
    "kubeconfig": "provision kubeconfig gcp-a3-64-gke --write ~/.kube/gke-a3",
    "k8s-launch": "provision k8s-launch gcp-a3-64-gke -- train.py --epochs 1",
    "check": "provision check aws-p5-ci --json",
}


def _version(value: bool) -> None:
    if value:
        from provision import __version__

        typer.echo(f"provision {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Bring up and tear down GPU training clusters on AWS, GCP, Azure and Alibaba Cloud from one spec."""


def add_examples(app: typer.Typer, examples: dict[str, Any] = EXAMPLES) -> None:
    """Give each registered command without an epilog its example from :data:`EXAMPLES`."""
    for info in app.registered_commands:
        name = info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
        if not info.epilog and name in examples:
            info.epilog = f"Example: {examples[name]}"


class JsonAwareGroup(TyperGroup):
    """With ``--json``, errors click reports itself (a bad option, a missing argument) are one JSON document too.

    Exit codes stay the contract: 2 for a usage error, 130 for an interrupt, 1 for an abort.
    """

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, standalone_mode: bool = True, **extra: Any
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        self._as_json = "--json" in argv  # this group object is built for one invocation
        if standalone_mode and any("\x00" in str(a) for a in argv):
            # No OS argument, path or remote command can hold a NUL byte (C strings end there): a usage error,
            # not an internal one from deep inside subprocess or open().
            _refuse_nul("--json" in argv)
        if "--json" not in argv or not standalone_mode:
            return super().main(args=args, standalone_mode=standalone_mode, **extra)
        from provision.cli.common import EXIT_INTERRUPTED, emit_json, interrupted_doc
        from provision.spec.secrets import scrub

        try:
            code = super().main(args=argv, standalone_mode=False, **extra)
        except typer.TyperException as e:
            emit_json({"error": "UsageError", "message": scrub(e.format_message(), blobs=True), "problems": []})
            sys.exit(e.exit_code)
        except typer.Abort:
            emit_json({"error": "Aborted", "message": "aborted: nothing was changed", "problems": []})
            sys.exit(1)
        except KeyboardInterrupt:
            emit_json(interrupted_doc())
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(code if isinstance(code, int) else 0)

    def make_context(self, *args: Any, **extra: Any) -> Any:
        """Parsing the arguments imports the commands' modules: a Ctrl-C there reports itself as in :meth:`invoke`
        (typer alone turns it into a silent exit 130: no JSON document under ``--json``, no message)."""
        try:
            return super().make_context(*args, **extra)
        except KeyboardInterrupt:
            self._interrupted()

    def invoke(self, ctx: Any) -> Any:
        """A Ctrl-C outside every ``run_command`` (imports, option checks) still reports itself: exit 130,
        the interrupted JSON document under ``--json``. Typer alone turns it into a silent exit 130."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            self._interrupted()

    def _interrupted(self) -> NoReturn:
        from provision.cli.common import EXIT_INTERRUPTED, console, emit_json, interrupted_doc

        if getattr(self, "_as_json", False):
            emit_json(interrupted_doc())
        console(stderr=True).print("interrupted", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _refuse_nul(as_json: bool) -> None:
    message = "an argument contains a NUL byte, which no path, name or command may hold. To fix: remove it"
    if as_json:
        from provision.cli.common import emit_json

        emit_json({"error": "UsageError", "message": message, "problems": []})
    else:
        typer.echo(f"error: {message}", err=True)
    sys.exit(2)


def build_app() -> typer.Typer:
    """A new ``provision`` app with every command registered."""
    app = typer.Typer(
        cls=JsonAwareGroup,
        name="provision",
        help="Bring up and tear down GPU training clusters on AWS, GCP, Azure and Alibaba Cloud from one spec.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        callback=_root,
    )
    for module in COMMAND_MODULES:
        module.register(app)
    from provision.cli import bench  # provision bench (a training microbenchmark against the plan)

    bench.register(app)
    add_examples(app)
    return app


app = build_app()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
