"""Strict patterns per kind of value that reaches a node script (issue 12: no injection into node scripts).

Every value a spec can influence is checked here before :mod:`provision.planning.bootstrap` renders it
(and, for ``image.versions``, already at plan time by :func:`provision.planning.images.check_image`).
"""

from __future__ import annotations

import re

#: Strict patterns per kind of value (issue 12: anything a spec can influence is checked before it is rendered).
PATTERNS: dict[str, str] = {
    # Debian/NVIDIA/vendor versions: 570, 2.27.5-1+cuda12.9, 2.15.4-42-gd6d405d, 1.5.7
    "version": r"[0-9A-Za-z][0-9A-Za-z.+~:_-]{0,63}",
    # Debian package names (Debian Policy 5.6.1: lower case letters, digits, + - . ; at least two characters)
    "package": r"[a-z0-9][a-z0-9+.-]{1,63}",
    # OCI image references: registry/path[:tag][@sha256:digest]
    "image": r"[a-z0-9][a-z0-9.-]*(?::[0-9]{1,5})?(?:/[a-z0-9][a-z0-9._-]*)+(?::[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?"
    r"(?:@sha256:[0-9a-f]{64})?",
    "digest": r"[0-9a-f]{64}",
    "url": r"https?://[A-Za-z0-9][A-Za-z0-9.-]*(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~%+-]+)*/?",
    "path": r"/(?:[A-Za-z0-9._-]+/?)*",
    "paths": r"/[A-Za-z0-9._/-]*(?: /[A-Za-z0-9._/-]*)*",
    # An absolute path that may hold shell wildcards (a tool whose directory carries a version: /opt/hpcx-*/...)
    "glob-path": r"/[A-Za-z0-9._/*-]*",
    "user": r"[a-z_][a-z0-9_-]{0,31}",
    "name": r"[a-z][a-z0-9-]{0,62}",
    "mount-source": r"[A-Za-z0-9][A-Za-z0-9._@:/-]{0,254}",
    "mount-options": r"[a-z0-9][a-z0-9_,=.:+-]{0,254}",
    "fstype": r"[a-z0-9.]{1,16}",
    "flag": r"true|false",
    "int": r"[0-9]{1,6}",
    "token": r"[A-Za-z0-9][A-Za-z0-9._+:~-]{0,63}",
    # NCCL / libfabric values: prefixes lists, bindings (enp6s0:8-21,112-125;...), paths, numbers
    "env": r"[A-Za-z0-9_.,:;/=+^@-]{0,1024}",
    # One OpenSSH public key line (checked in full by the spec; here: one printable line)
    "ssh-key": r"[\x20-\x7e]{1,16384}",
}
_COMPILED = {kind: re.compile(pattern) for kind, pattern in PATTERNS.items()}


class UnsafeValueError(ValueError):
    """A value that does not match the strict pattern of its kind; it is never rendered."""


def checked(kind: str, value: str, where: str) -> str:
    """``value`` when it fully matches the pattern of ``kind``.

    Raises:
        UnsafeValueError: naming ``where`` (the spec field or output it came from), the value and the rule.
    """
    if not isinstance(value, str) or not _COMPILED[kind].fullmatch(value) or (kind == "path" and "/../" in value + "/"):
        shown = repr(value)[:80]
        raise UnsafeValueError(f"{where}: {shown} is not a valid {kind} (must match ^{PATTERNS[kind]}$)")
    return value
