"""Mocked clouds with state: ``up``, ``status``, ``outputs`` and ``down`` with no CLI and no credentials.

``Cluster(..., mock=True)`` and ``provision ... --mock`` run the real program under
:class:`~provision.testing.CloudMocks` in this process (:func:`provision.testing.run_program`)
and keep what it registered in ``$PROVISION_HOME/mock/<stack>.json`` (0600): the spec and
its hash, every resource (type, name, inputs, id), the outputs, and the creation time.

Like the Pulumi engine, an ``up`` compares the new resource graph with the stored one by
(type, logical name): resources only in the new graph are created, only in the old one
deleted, and those whose inputs differ updated (with the differing input paths). An ``up``
of an unchanged spec therefore reports 0 changes and writes nothing. ``down`` deletes the
state file. The creation time is kept across updates, as ``provision:createdAt`` is.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from provision.engine.progress import ResourceChange
from provision.spec import ClusterSpec
from provision.spec.errors import CloudError
from provision.spec.units import format_time, parse_time

#: Bumped when the file layout changes; a file of another version is refused with a clear error.
STATE_VERSION = 1
_SAFE_STACK = re.compile(r"[^A-Za-z0-9._-]")


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (what is stored is what is compared)."""
    return json.loads(json.dumps(value, default=str, sort_keys=True))


def spec_hash(spec: ClusterSpec) -> str:
    """A stable hash of the spec's canonical JSON."""
    text = json.dumps(spec.model_dump(mode="json", exclude_none=True), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class MockResource:
    """One resource as the mocked cloud holds it."""

    type: str
    name: str
    inputs: dict[str, Any]
    id: str
    custom: bool = True
    #: The program's resource options of the latest run (not stored: a diff reads the new graph's).
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.type, self.name)

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "name": self.name, "id": self.id, "custom": self.custom, "inputs": self.inputs}


@dataclass
class MockState:
    """What exists in the mocked cloud for one stack."""

    stack: str
    spec: dict[str, Any]
    spec_hash: str
    resources: list[MockResource]
    outputs: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    version: int = STATE_VERSION

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "stack": self.stack,
            "spec_hash": self.spec_hash,
            "spec": self.spec,
            "created_at": format_time(self.created_at),
            "updated_at": format_time(self.updated_at),
            "resources": [r.as_dict() for r in self.resources],
            "outputs": self.outputs,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> MockState:
        """A state from its JSON document.

        Raises:
            ValueError: the document is not a complete state of this version (says what is wrong).
        """
        for key, kind in (
            ("stack", str),
            ("spec", dict),
            ("spec_hash", str),
            ("created_at", str),
            ("updated_at", str),
            ("resources", list),
            ("outputs", dict),
        ):
            if not isinstance(doc.get(key), kind):
                got = "missing" if key not in doc else f"a {type(doc[key]).__name__}"
                raise ValueError(f"{key!r} is {got}, not a {kind.__name__}")
        resources = []
        for i, r in enumerate(doc["resources"]):
            if not isinstance(r, dict) or not isinstance(r.get("type"), str) or not isinstance(r.get("name"), str):
                raise ValueError(f"resources[{i}] is not a resource with a type and a name")
            inputs = r.get("inputs") or {}
            if not isinstance(inputs, dict):
                raise ValueError(f"resources[{i}].inputs is not a mapping")
            resources.append(
                MockResource(r["type"], r["name"], inputs, str(r.get("id") or ""), r.get("custom", True) is not False)
            )
        try:
            created_at, updated_at = parse_time(doc["created_at"]), parse_time(doc["updated_at"])
        except (ValueError, OverflowError) as e:
            raise ValueError(f"a time is not an ISO 8601 UTC time ({e})") from None
        return cls(
            stack=doc["stack"],
            spec=doc["spec"],
            spec_hash=doc["spec_hash"],
            resources=resources,
            outputs=doc["outputs"],
            created_at=created_at,
            updated_at=updated_at,
            version=STATE_VERSION,
        )


@dataclass
class MockPlan:
    """The outcome of running the program against stored state: the new state and the steps to it."""

    state: MockState
    changes: list[ResourceChange] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self.changes:
            counts[c.op] = counts.get(c.op, 0) + 1
        return counts

    @property
    def changed(self) -> bool:
        return any(c.op != "same" for c in self.changes)


class MockStore:
    """Mock state files, one a stack, under ``<home>/mock/`` (0700; files 0600).

    Args:
        home: the provision home; ``$PROVISION_HOME`` or ``~/.provision`` when ``None``.
    """

    def __init__(self, home: Path | None = None) -> None:
        from provision.engine.automation import private_dir, provision_home

        self.root = private_dir((home or provision_home()) / "mock")
        self.clean_temp_files()

    def path(self, stack: str) -> Path:
        return self.root / f"{_SAFE_STACK.sub('_', stack)}.json"

    def load(self, stack: str) -> MockState | None:
        """The stored state of ``stack``; ``None`` only when no state file exists.

        Raises:
            DamagedStateError: the file exists but is not a complete state of this version (a
                foreign version, ``[]``, ``null``, missing fields, bad JSON). Nothing treats such a
                file as "nothing exists": that would make ``down`` forget every resource in it.
        """
        path = self.path(stack)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            raise DamagedStateError(path, "is not UTF-8 text") from None
        from provision.spec.yamlsafe import MAX_JSON_DEPTH, json_nesting_depth

        if json_nesting_depth(text) > MAX_JSON_DEPTH:
            raise DamagedStateError(path, f"nests deeper than {MAX_JSON_DEPTH} levels, which no state does")
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise DamagedStateError(path, f"is not JSON ({str(e)[:120]})") from None
        if not isinstance(doc, dict):
            raise DamagedStateError(path, f"holds a JSON {type(doc).__name__}, not a provision state")
        version = doc.get("version")
        if version != STATE_VERSION:
            raise DamagedStateError(
                path,
                f"has state version {version!r}, and this provision reads version {STATE_VERSION}",
                "run the provision version that wrote it (its `down` removes what it holds)",
            )
        try:
            return MockState.from_dict(doc)
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as e:
            raise DamagedStateError(path, f"is damaged ({str(e)[:200]})") from None

    def save(self, state: MockState) -> Path:
        """Write atomically with owner-only permissions; no secret is written (they are redacted).

        A failed write (a full disk) removes its temporary file; one left by a killed process is
        removed by the next :class:`MockStore`.
        """
        from provision.spec.secrets import scrub_data

        path = self.path(state.stack)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(scrub_data(state.as_dict()), f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            # Name the state file (a full disk mid-write has no filename on the error).
            raise OSError(e.errno, e.strerror or str(e), str(path)) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return path

    def delete(self, stack: str) -> MockState | None:
        """Remove the stack's state; returns what was there. A damaged file is refused, never removed."""
        state = self.load(stack)
        self.path(stack).unlink(missing_ok=True)
        return state

    def clean_temp_files(self) -> list[Path]:
        """Remove temporary files of writes whose process is gone (a full disk, a kill); returns them."""
        removed = []
        for tmp in self.root.glob(".*.json.*.tmp"):
            pid = tmp.name.rsplit(".", 2)[-2]
            if pid.isdigit() and (int(pid) == os.getpid() or process_alive(int(pid))):
                continue
            try:
                tmp.unlink()
                removed.append(tmp)
            except OSError:
                continue
        return removed

    def stacks(self) -> list[str]:
        return sorted(p.stem for p in self.root.glob("*.json"))


def recorded_outputs(stack: str) -> dict[str, Any] | None:
    """The outputs the mocked cloud holds for ``stack`` (a volume a cluster reads through a StackReference)."""
    state = MockStore().load(stack)
    return None if state is None else dict(state.outputs)


def process_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class DamagedStateError(CloudError):
    """A mock state file that cannot be trusted: refused, never read as "nothing exists" (exit 1)."""

    def __init__(self, path: Path, why: str, fix: str = "") -> None:
        self.path = path
        fix = fix or f"restore it from a backup; or, if nothing of this stack exists any more, delete it: rm {path}"
        super().__init__(f"the mock state {path} {why}. To recover: {fix}")


def input_diff(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths where ``new`` differs from ``old`` (mappings and same-length lists recurse)."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            path = f"{prefix}.{k}" if prefix else str(k)
            if k not in old or k not in new:
                keys.append(path)
            else:
                keys.extend(input_diff(old[k], new[k], path))
        return keys
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        keys = []
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            keys.extend(input_diff(a, b, f"{prefix}[{i}]"))
        return keys
    return [] if old == new else [prefix or "(value)"]


def _paths_referring(value: Any, ids: set[str], prefix: str = "") -> list[str]:
    """Dotted paths (as :func:`input_diff` writes them) of the leaves of ``value`` that hold one of ``ids``."""
    if not ids:
        return []
    if isinstance(value, dict):
        return [
            p
            for k in sorted(value, key=str)
            for p in _paths_referring(value[k], ids, f"{prefix}.{k}" if prefix else str(k))
        ]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _paths_referring(v, ids, f"{prefix}[{i}]")]
    text = str(value) if isinstance(value, str) else ""
    return [prefix or "(value)"] if text and any(i in text for i in ids) else []


#: The key of a step replaced because ``up`` was asked to (``pulumi up --replace``), not for a changed input.
FORCED = "(replace requested)"


def diff_resources(
    old: list[MockResource], new: list[MockResource], replace: frozenset[tuple[str, str]] = frozenset()
) -> list[ResourceChange]:
    """Engine-style steps from ``old`` to ``new``: create / update / replace (changed keys) / same, then deletes.

    A change is a ``replace`` when a changed input is under the resource's ``replace_on_changes`` or is one
    its provider can only change by replacing it (:mod:`provision.clouds.replacement`); its keys are then
    the inputs that force it. Resources keyed in ``replace`` are replaced whatever changed (``--replace``).
    """
    from provision.clouds.replacement import replacing_keys

    before = {r.key: r for r in old}
    after = {r.key for r in new}
    steps = []
    # The mocked ids follow the logical names, so a replaced resource keeps its id here; a real replacement gets a
    # new id, which changes every input that refers to it (dependents register later, so one pass sees them).
    replaced: set[str] = set()
    for r in new:
        prev = before.get(r.key)
        if prev is None:
            steps.append(ResourceChange("create", r.type, r.name))
        else:
            keys = input_diff(prev.inputs, r.inputs)
            keys += [k for k in _paths_referring(r.inputs, replaced) if k not in keys]
            forcing = replacing_keys(r.type, keys, r.replace_on_changes) if keys else ()
            if r.key in replace:
                forcing = (*forcing, FORCED)
            if forcing:
                steps.append(ResourceChange("replace", r.type, r.name, forcing))
                if r.id:
                    replaced.add(r.id)
            else:
                steps.append(ResourceChange("update" if keys else "same", r.type, r.name, tuple(keys)))
    # Deletes run after creates and updates, in reverse registration order (dependents first).
    steps.extend(ResourceChange("delete", r.type, r.name) for r in reversed(old) if r.key not in after)
    return steps


class MockRunFailedError(CloudError):
    """A mocked ``up`` failed part-way (an injected fault); ``state`` is what exists afterwards.

    Like a real Pulumi run, what was created before the failure stays: the state keeps the
    resources registered so far plus the earlier ones not reached, and ``down`` removes them.
    """

    def __init__(
        self, message: str, code: str, state: MockState, listed: dict[str, list[dict[str, Any]]] | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.state = state
        #: What the mocked cloud's node groups list as their errors (``Fault(reported="listed")``), by id.
        self.listed = dict(listed or {})


def destroy_steps(state: MockState | None) -> list[ResourceChange]:
    """The steps of deleting everything in ``state`` (dependents first)."""
    if state is None:
        return []
    return [ResourceChange("delete", r.type, r.name) for r in reversed(state.resources)]
