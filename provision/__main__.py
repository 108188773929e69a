"""``python -m provision``: the ``provision`` command (the same as ``python -m provision.cli``)."""

from provision.cli import main

main()
