"""The ``provision`` command line (see :mod:`provision.cli.app`)."""

from __future__ import annotations


def main() -> None:
    """Console-script entry point; imports the app only when called."""
    from provision.cli.app import main as run

    run()
