"""The ``provision`` command line (see :mod:`provision.cli.app`)."""

from __future__ import annotations

import sys

#: Exit code of an interrupted command (128 + SIGINT), as ``provision.cli.common.EXIT_INTERRUPTED``.
_INTERRUPTED = 130


def main() -> None:
    """Console-script entry point; imports the app only when called.

    A Ctrl-C that lands while the app is still importing (before its own handlers exist) still ends
    in exit 130, with the interrupted JSON document under ``--json`` (the same one
    ``provision.cli.common.interrupted_doc`` writes), not in a traceback or a bare signal exit.
    """
    try:
        from provision.cli.app import main as run

        run()
    except KeyboardInterrupt:
        if "--json" in sys.argv[1:]:
            import json

            doc = {"error": "Interrupted", "message": "interrupted (Ctrl-C or SIGINT)", "problems": []}
            sys.stdout.write(json.dumps({**doc, "exit_code": _INTERRUPTED}, indent=2) + "\n")
        else:
            sys.stderr.write("interrupted\n")
        sys.exit(_INTERRUPTED)
