"""Adopting resources a cluster's ``down`` left in the cloud (``retain_on_delete``) into a volume stack.

Pulumi's ``import_`` resource option adopts an existing resource into the stack that declares it: "you must specify
all required arguments to the resource constructor so that it exactly matches the state to import", else the update
fails ("error: inputs to import do not match the existing resource";
www.pulumi.com/docs/iac/concepts/resources/options/import/, whose example declares an auto-named security group's
``name`` too). So each resource is declared with the inputs the cluster's stack recorded for it (its state's
``inputs``, the auto-name included), the references between them (a subnet's ``vpcId``, the
file system's security groups) as the adopted resources' outputs, so the engine orders them. Once adopted they are
the volume stack's like any other: its ``destroy`` deletes them (``retain_on_delete`` is not carried over).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pulumi


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _declared(cls: Any, inputs: dict[str, Any], ids: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments of ``cls`` for the recorded camelCase ``inputs``, ids of adopted resources as their
    outputs. Keys the class does not take (the engine's ``__defaults`` bookkeeping) are left out."""
    params = set(inspect.signature(cls._internal_init).parameters)

    def ref(value: Any) -> Any:
        if isinstance(value, str) and value in ids:
            return ids[value]
        if isinstance(value, list):
            return [ref(v) for v in value]
        return value

    return {_snake(k): ref(v) for k, v in inputs.items() if not k.startswith("__") and _snake(k) in params}


def adopt_resources(prefix: str, kept: list[dict[str, Any]], classes: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    """Declare each kept resource (``type``, ``id``, ``inputs``) as ``<prefix>-<part>`` with ``import_=id``.

    Returns the resources by type token. Raises ValueError when a kept resource's type has no class here, or
    ``kept`` holds two of one type (the volume program knows one of each).
    """
    todo = list(kept)
    types = [k["type"] for k in todo]
    unknown = sorted({t for t in types if t not in classes})
    if unknown or len(set(types)) != len(types):
        raise ValueError(f"cannot adopt {', '.join(unknown) or 'two resources of one type'} into a volume stack")
    ids: dict[str, Any] = {}
    made: dict[str, Any] = {}
    all_ids = {str(k["id"]) for k in todo}
    while todo:
        # A resource whose inputs name another kept resource's id comes after it.
        ready = [
            k for k in todo if not any(v in all_ids and v not in ids and v != k["id"] for v in _strings(k["inputs"]))
        ]
        if not ready:
            raise ValueError("kept resources reference each other in a cycle")
        for k in ready:
            cls, part = classes[k["type"]]
            res = cls(
                f"{prefix}-{part}",
                **_declared(cls, k["inputs"], ids),
                opts=pulumi.ResourceOptions(import_=str(k["id"])),
            )
            ids[str(k["id"])] = res.id
            made[k["type"]] = res
            todo.remove(k)
    return made


def _strings(inputs: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for v in inputs.values():
        out += [v] if isinstance(v, str) else [x for x in v if isinstance(x, str)] if isinstance(v, list) else []
    return out
