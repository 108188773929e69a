"""``python -m provision.cli``: the ``provision`` command."""

from provision.cli import main

main()
