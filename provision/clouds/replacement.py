"""Which input changes a real cloud applies by replacing the resource: force-new fields and ``replace_on_changes``.

A Pulumi preview against a real cloud reports ``replace`` when a changed input is one the provider cannot
update in place (Terraform-bridged providers mark such fields ``ForceNew``; pulumi-azure-native marks
path parameters and ``location``), or when the program lists it in the resource's ``replace_on_changes``.
The mocked cloud has no provider, so it reads both from here: each cloud's
``provision/clouds/<cloud>/forcenew.py`` holds ``FORCE_NEW`` (type token -> :class:`ForceNew`, with its
source) and ``NODES`` (the types whose replacement replaces GPU nodes).

Paths are the inputs as the engine sends them (camelCase, ``[i]`` for list items); a rule path matches
itself and everything under it, and ``*`` matches every input (Pulumi's ``replaceOnChanges`` semantics).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass

#: Pulumi package prefix of a type token -> our cloud folder (the same as the mocked cloud's).
_CLOUDS = {"aws": "aws", "gcp": "gcp", "azure-native": "azure", "alicloud": "alibaba"}


@dataclass(frozen=True)
class ForceNew:
    """The inputs of one resource type that the provider can only change by replacing it."""

    fields: tuple[str, ...]
    source: str


def _module(type_token: str) -> object | None:
    cloud = _CLOUDS.get(type_token.split(":", 1)[0])
    return importlib.import_module(f"provision.clouds.{cloud}.forcenew") if cloud else None


def force_new(type_token: str) -> ForceNew | None:
    """The provider's force-new inputs of ``type_token`` (``None`` when none are known)."""
    module = _module(type_token)
    table: dict[str, ForceNew] = getattr(module, "FORCE_NEW", {}) if module else {}
    return table.get(type_token)


def is_node_type(type_token: str) -> bool:
    """Whether replacing a resource of this type replaces (deletes and recreates) GPU nodes."""
    module = _module(type_token)
    return type_token in (getattr(module, "NODES", frozenset()) if module else frozenset())


def _under(path: str, rule: str) -> bool:
    if rule == "*":
        return True
    return path == rule or path.startswith(rule + ".") or path.startswith(rule + "[")


def _generic(path: str) -> str:
    """``a[0].b`` -> ``a.b``: rules name fields, not list positions."""
    import re

    return re.sub(r"\[\d+\]", "", path)


def replacing_keys(type_token: str, changed: Iterable[str], replace_on_changes: Iterable[str] = ()) -> tuple[str, ...]:
    """The changed input paths that force a replacement: under ``replace_on_changes`` or a force-new field."""
    rules = list(replace_on_changes)
    known = force_new(type_token)
    rules += list(known.fields) if known else []
    out = []
    for path in changed:
        if any(_under(path, r) or _under(_generic(path), r) for r in rules):
            out.append(path)
    return tuple(out)


def reason(type_token: str, keys: Iterable[str], replace_on_changes: Iterable[str] = ()) -> str:
    """Where the replacement comes from: the program's ``replace_on_changes`` or the provider (with its source)."""
    keys = list(keys)
    program = [k for k in keys if any(_under(k, r) or _under(_generic(k), r) for r in replace_on_changes)]
    if program:
        return "the program's replace_on_changes"
    known = force_new(type_token)
    return f"force-new in the provider ({known.source})" if known else "force-new in the provider"


def node_replacement_warnings(steps: Iterable[object]) -> list[str]:
    """One warning per step that replaces GPU nodes (steps have ``op``, ``type``, ``name`` and ``keys``)."""
    out = []
    for step in steps:
        op, type_token = getattr(step, "op", ""), getattr(step, "type", "")
        if op not in ("replace", "create-replacement") or not is_node_type(type_token):
            continue
        keys = tuple(getattr(step, "keys", ()) or ())
        why = f" because {', '.join(keys)} changed" if keys else ""
        out.append(
            f"{type_token} {getattr(step, 'name', '')} is replaced{why}: every running node it holds is deleted "
            "and new nodes are launched (running jobs, local scratch data and the nodes' host keys are lost). "
            "To keep the nodes: revert that change, or plan the replacement for when no job runs"
        )
    return out
