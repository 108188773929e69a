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
from typing import Any

import typer
from typer.core import TyperGroup

from provision.cli import catalog, check, k8s, lifecycle, nodes, offers, plan, reap, size

#: The command groups, in the order ``provision --help`` lists them.
COMMAND_MODULES = (offers, plan, lifecycle, nodes, size, reap, catalog, k8s, check)


class JsonAwareGroup(TyperGroup):
    """With ``--json``, errors click reports itself (a bad option, a missing argument) are one JSON document too.

    Exit codes stay the contract: 2 for a usage error, 130 for an interrupt, 1 for an abort.
    """

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, standalone_mode: bool = True, **extra: Any
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
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


def build_app() -> typer.Typer:
    """A new ``provision`` app with every command registered."""
    app = typer.Typer(
        cls=JsonAwareGroup,
        name="provision",
        help="Bring up and tear down GPU training clusters on AWS, GCP, Azure and Alibaba Cloud from one spec.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for module in COMMAND_MODULES:
        module.register(app)
    return app


app = build_app()


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
