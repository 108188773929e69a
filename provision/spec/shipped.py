"""The folders provision ships beside its code: ``images/`` and ``stacks/`` at the top of the repository.

A wheel carries them inside the package as ``provision/_images`` and ``provision/_stacks``
(``setup.py`` maps the folders; ``pyproject.toml`` lists their files as package data), read
through :mod:`importlib.resources`. Run from a checkout (on ``PYTHONPATH``, or the editable
install the README sets up) the package has no such folders, and the checkout's own
``images/`` and ``stacks/`` beside ``provision/`` are read instead: the same files the wheel
is built from. Nothing else is searched (no ``sys.prefix`` data files, no working directory).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from provision.spec.errors import ProvisionError

#: Repository folder -> its folder inside the installed package.
PACKAGED = {"images": "_images", "stacks": "_stacks"}

_REINSTALL = "reinstall provision (pip install --force-reinstall --no-deps provision)"


def shipped_dir(name: str) -> Path:
    """The shipped folder ``name`` (``images`` or ``stacks``): the installed package's copy, else the checkout's.

    Raises:
        ProvisionError: neither exists (a broken install); the message names where it looked.
    """
    package = resources.files("provision")
    # A wheel installs into a plain folder, so the package's files are a pathlib.Path (not a zip).
    root = Path(str(package))
    installed = root / PACKAGED[name]
    if installed.is_dir():
        return installed
    checkout = root.parent / name
    if checkout.is_dir() and (root.parent / "pyproject.toml").is_file():
        return checkout
    raise ProvisionError(
        f"provision's {name}/ folder is missing: neither {installed} (installed package) nor {checkout} (checkout) "
        f"exists. To fix: {_REINSTALL}"
    )


def read_shipped(name: str, relative: str) -> str:
    """The text of ``relative`` inside the shipped folder ``name``.

    Raises:
        ProvisionError: the folder or the file is missing (a broken install), with the fix.
    """
    path = shipped_dir(name) / relative
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProvisionError(
            f"provision's {name}/{relative} is missing ({path} does not exist). To fix: {_REINSTALL}"
        ) from None
