"""What a ``Cluster`` target names: a spec, a stack file, a stack in ``stacks/`` or a cluster in the state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from provision.spec import ClusterSpec
from provision.spec.errors import CloudError, Problem, SpecError
from provision.spec.loading import resolve_target, stack_of_file

#: Pulumi stack names: letters, digits, '-', '_', '.', optionally as org/project/stack.
STACK_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./")


def resolve_cluster(target: Any, root: Path | None, mock: bool, command: Any = None) -> tuple[ClusterSpec, str]:
    """(spec, default stack name): the stack file's stack, else the spec's name.

    A name that is no file and no stack in ``stacks/`` is looked up in the state: a stack or
    cluster name known there resolves to its recorded spec and stack (the spec file may be gone).
    """
    try:
        spec, source = resolve_target(target, root)
    except SpecError:
        text = str(target) if isinstance(target, (str, Path)) else ""
        if not text or "/" in text or text.endswith((".yaml", ".yml")):
            raise
        from provision.ops.inventory import find_cluster
        from provision.spec import load_spec

        try:
            record = find_cluster(text, mock, root, command)
        except CloudError:  # real mode without a usable backend: the file error says more
            record = None
        if record is None:
            raise
        return load_spec(record.spec), record.stack
    return spec, (stack_of_file(source) if source else None) or spec.name


def check_stack_name(stack: str) -> str:
    """``stack`` when it is a valid Pulumi stack name.

    Raises:
        SpecError: it is not (names the rule and the fix).
    """
    # Pulumi: "stack names are limited to 100 characters and may only contain alphanumeric, hyphens,
    # underscores, or periods" (pkg/backend/diy ParseReference); longer ones also overflow lock file names.
    too_long = len(stack.rsplit("/", 1)[-1]) > 100
    if not stack or not set(stack) <= STACK_CHARS or stack.startswith(("/", ".")) or "//" in stack or too_long:
        raise SpecError(
            problems=[
                Problem(
                    "stack",
                    stack,
                    "is not a valid Pulumi stack name",
                    "use at most 100 letters, digits, '-', '_' and '.'",
                )
            ]
        )
    return stack
