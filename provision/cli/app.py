"""The ``provision`` command: the Typer app and the registration of every command module.

Every command takes ``--json`` and then prints one JSON document on stdout and nothing
else. Exit codes: 0 success, 2 the user's input is wrong, 3 refused by policy or budget,
1 anything else (130 when interrupted). User errors never print a traceback.

Command modules (``offers``, ``plan``, ``lifecycle``, ``nodes``, ``size``, ``reap``) each expose
``register(app)``; they import :mod:`provision.cli.common`, never this module.
"""

from __future__ import annotations

import typer

from provision.cli import catalog, k8s, lifecycle, nodes, offers, plan, reap, size

#: The command groups, in the order ``provision --help`` lists them.
COMMAND_MODULES = (offers, plan, lifecycle, nodes, size, reap, catalog, k8s)


def build_app() -> typer.Typer:
    """A new ``provision`` app with every command registered."""
    app = typer.Typer(
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
