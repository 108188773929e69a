"""``python -m provision.cli``: the ``provision`` command."""

from provision.cli.app import main

main()
