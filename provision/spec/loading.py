"""Loading a cluster spec from data, files and stack names, and turning pydantic errors into problems.

Every function reports all problems at once as a :class:`~provision.spec.errors.SpecError`; values
that may be secrets (``access.ssh_public_keys``) are never echoed. :mod:`provision.spec.models`
re-exports these names, which are the public contract.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from provision.spec.errors import MISSING, REDACTED, Problem, SpecError
from provision.spec.models import CONFIG_KEY, ClusterSpec, cross_field_problems


def _known_fields(loc: tuple[Any, ...]) -> list[str]:
    """Field names at ``loc`` (the parent of an unknown key), for did-you-mean hints."""
    model: Any = ClusterSpec
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return []
        ann = field.annotation
        model = next(
            (a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, BaseModel)),
            None,
        )
    return list(getattr(model, "model_fields", {}))


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_FIX_BY_TYPE = {
    "missing": "add it",
    "literal_error": "use one of the listed values",
    "string_pattern_mismatch": "change it to match the pattern",
    "greater_than": "use a larger number",
    "greater_than_equal": "use a larger number",
    "less_than": "use a smaller number",
    "less_than_equal": "use a smaller number",
    "string_too_long": "shorten it",
    "too_long": "give fewer items",
    "too_short": "give more items",
    "int_parsing": "write a whole number",
    "int_from_float": "write a whole number",
    "float_parsing": "write a number",
    "float_type": "write a number",
    "int_type": "write a whole number",
    "bool_type": "write true or false",
    "finite_number": "write a finite number",
    "bool_parsing": "write true or false",
    "dict_type": "write a mapping (key: value)",
    "model_type": "write a mapping (key: value)",
    "string_type": "write text in quotes",
    "invalid_key": "write the key as text (a field name), e.g. name:",
    "string_too_short": "give a value",
    "tuple_type": "write a list",
    "list_type": "write a list",
}

_SECRET_PATHS = ("access.ssh_public_keys",)

# What to write instead when a value breaks a field's pattern, by the last field name in its path.
_PATTERN_FIXES = {
    "name": "use 2-40 characters: lowercase letters, digits and '-', starting with a letter and not ending in '-'",
    "[key]": "start with a lowercase letter, then up to 62 lowercase letters, digits, '_' or '-' (GCP label rules)",
    "tags": "use up to 63 lowercase letters, digits, '_' or '-' (GCP label rules, the strictest of the clouds)",
    "ssh_user": "use a Linux user name: lowercase letters, digits, '_' or '-', at most 32 characters",
    "mount": "use an absolute path such as /shared",
    "project": "use the GCP project id (6-30 lowercase letters, digits, '-'), not its name or number",
    "vpc_id": "use an id like vpc-0123456789abcdef0",
    "subnet_id": "use an id like subnet-0123456789abcdef0",
    "reservation": "use the reservation's id or name",
}


def problems_from_validation(err: ValidationError, data: Any = None) -> list[Problem]:
    """Turn a pydantic ``ValidationError`` into user-facing problems, with did-you-mean hints.

    Values under ``access.ssh_public_keys`` are never echoed.
    """
    from provision.catalog import suggest

    out: list[Problem] = []
    for e in err.errors(include_url=False, include_input=True):
        loc = tuple(e.get("loc", ()))
        if loc and loc[-1] in ("function-after[_cross_fields()]", "function-before[_gpu_shorthand()]"):
            loc = loc[:-1]
        loc = tuple(p for p in loc if not (isinstance(p, str) and p.startswith("function-")))
        # pydantic marks a bad mapping key with a trailing "[key]"; the path names the entry instead.
        is_key = bool(loc) and loc[-1] == "[key]"
        path = _path(loc[:-1] if is_key else loc)
        kind = e.get("type", "")
        value = e.get("input", MISSING)
        msg = str(e.get("msg", "")).removeprefix("Value error, ")
        if kind == "extra_forbidden":
            hints = suggest(str(loc[-1]), _known_fields(loc[:-1]))
            fix = f"did you mean {' or '.join(repr(h) for h in hints)}?" if hints else "remove it"
            fields = _known_fields(loc[:-1])
            rule = "is not a known field" + (f" (known: {', '.join(fields)})" if fields and not hints else "")
            out.append(Problem(path, loc[-1], rule, fix))
            continue
        if any(path.startswith(s) for s in _SECRET_PATHS) or path == "access":
            value = REDACTED
        if kind == "missing":
            value = MISSING
        if isinstance(value, dict) and kind not in ("dict_type", "model_type"):
            value = MISSING if kind == "missing" else "{...}"
        fix = _FIX_BY_TYPE.get(kind, "")
        if kind == "literal_error":
            allowed = re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected", "")))
            hints = suggest(str(value), allowed) if isinstance(value, str) else []
            fix = (
                f"did you mean {' or '.join(repr(h) for h in hints)}?" if hints else f"use one of: {', '.join(allowed)}"
            )
        if kind == "string_pattern_mismatch":
            key = "[key]" if is_key else ("tags" if loc and loc[0] == "tags" else str(loc[-1]))
            fix = _PATTERN_FIXES.get(key, fix)
            msg = f"does not match {e.get('ctx', {}).get('pattern', 'the pattern')}"
        if "; " in msg and "to fix" not in msg and kind == "value_error":
            rule, _, fix = msg.partition("; ")
        else:
            rule = msg[0].lower() + msg[1:] if msg else kind
        if is_key:
            rule = f"is not a valid key: {rule}"
        if kind == "value_error" and isinstance(value, (dict, list, tuple)):
            value = "(see rule)"
        out.append(Problem(path, value, rule, fix))
    return out


#: Values a spec scan looks at, at most (a real spec has a few hundred).
_MAX_SCANNED = 20_000
#: Checked by the field's own validator (which names a pasted private key precisely, never echoing it).
_OWN_SECRET_CHECK = ("access.ssh_public_keys",)


def secret_problems(data: Any) -> list[Problem]:
    """A problem for every string in ``data`` (keys included) that holds a private key or token.

    A spec is echoed in plans, previews, state and logs, so it may hold no secret at all; the
    value itself is never shown, only what kind of secret it looks like. The walk is bounded
    (:data:`_MAX_SCANNED` values, 64 levels): data built from shared aliases can be huge.
    """
    from provision.spec.secrets import secret_kind

    out: list[Problem] = []
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    seen = 0
    while stack and seen < _MAX_SCANNED:
        value, path, depth = stack.pop()
        seen += 1
        if depth > 64 or path.startswith(_OWN_SECRET_CHECK):
            continue
        if isinstance(value, str):
            kind = secret_kind(value[:1_100_000], blobs=True)
            if kind:
                out.append(
                    Problem(
                        path,
                        REDACTED,
                        f"looks like a secret ({kind}); a spec is printed in plans, state and logs, so it holds none",
                        "remove it and rotate that secret; give public keys only (the .pub file); a commit hash fits "
                        "as its short form (git rev-parse --short=12)",
                    )
                )
        elif isinstance(value, dict):
            for k, v in reversed(list(value.items())):
                if isinstance(k, str) and secret_kind(k, blobs=True):
                    out.append(Problem(path or "(spec)", REDACTED, "has a key that looks like a secret", "remove it"))
                    continue
                stack.append((v, f"{path}.{k}" if path else str(k), depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in reversed(list(enumerate(value))))
    return out


def load_spec(data: Any) -> ClusterSpec:
    """Validate a spec mapping.

    Raises:
        SpecError: listing every problem found.
    """
    if isinstance(data, ClusterSpec):
        return data
    if not isinstance(data, dict):
        raise SpecError(problems=[Problem("", type(data).__name__, "is not a mapping", "write the spec as key: value")])
    found = [*secret_problems(data), *cross_field_problems(data)]
    try:
        spec = ClusterSpec.model_validate(data, context={"cross_fields_checked": True})
    except ValidationError as err:
        raise SpecError(problems=[*problems_from_validation(err, data), *found]) from None
    if found:
        raise SpecError(problems=found)
    return spec


def read_yaml(path: Path) -> Any:
    """Read one YAML document, turning syntax errors and broken bounds into a ``SpecError``.

    Only a regular file of at most 1 MiB is read (a FIFO, a device or a socket is refused before
    it is opened), with the bounds of :mod:`provision.spec.yamlsafe` (depth, alias expansion,
    duplicate keys, integer size).
    """
    from provision.spec.yamlsafe import FileTooLargeError, NotRegularFileError, load_bounded, read_text_bounded

    try:
        return load_bounded(read_text_bounded(path))
    except NotRegularFileError as e:
        raise SpecError(
            problems=[
                Problem("", str(path), f"is {e.kind}, not a regular file", "give a spec YAML file or a stack name")
            ]
        ) from None
    except FileTooLargeError as e:
        raise SpecError(
            problems=[
                Problem(
                    "", str(path), f"is larger than {e.limit // 1024} KiB, far more than any spec", "give the spec file"
                )
            ]
        ) from None
    except FileNotFoundError:
        raise SpecError(problems=[Problem("", str(path), "does not exist", "check the path")]) from None
    except IsADirectoryError:
        raise SpecError(problems=[Problem("", str(path), "is a folder", "give a YAML file or a stack name")]) from None
    except (OSError, UnicodeDecodeError) as e:  # no permission, a binary file, ...
        why = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
        raise SpecError(
            problems=[
                Problem("", str(path), f"cannot be read as a YAML text file ({why})", "give a readable spec file")
            ]
        ) from None
    except (RecursionError, ValueError, MemoryError) as e:  # what PyYAML itself may raise on hostile input
        raise SpecError(
            problems=[Problem("", str(path), f"cannot be read as YAML ({type(e).__name__})", "fix the file")]
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        raise SpecError(
            problems=[
                Problem(
                    "",
                    str(path),
                    f"is not valid YAML ({where}: {getattr(e, 'problem', e)})",
                    getattr(e, "fix", "fix it"),
                )
            ]
        ) from None


def spec_data_from_document(doc: Any, source: str) -> dict[str, Any]:
    """The spec mapping in a spec file or a Pulumi stack file (under ``config: provision:cluster``)."""
    if isinstance(doc, dict) and "config" in doc and isinstance(doc["config"], dict):
        cfg = doc["config"]
        if CONFIG_KEY not in cfg:
            raise SpecError(
                problems=[Problem("config", source, f"has no {CONFIG_KEY!r} key", f"put the spec under {CONFIG_KEY}")]
            )
        doc = cfg[CONFIG_KEY]
        if isinstance(doc, str):  # `pulumi config set` / set-all store structured values as JSON text
            from provision.spec.yamlsafe import MAX_JSON_DEPTH, json_nesting_depth

            try:
                if json_nesting_depth(doc) > MAX_JSON_DEPTH:
                    raise ValueError("nests too deep")
                doc = json.loads(doc)
            except (ValueError, RecursionError):
                raise SpecError(
                    problems=[
                        Problem(CONFIG_KEY, doc[:60], "is neither a mapping nor JSON", "write the spec as key: value")
                    ]
                ) from None
        if isinstance(doc, dict) and set(doc) == {"secure"}:
            raise SpecError(
                problems=[
                    Problem(CONFIG_KEY, "secure", "is encrypted", "keep the spec in plain config; only keys are secret")
                ]
            )
    if not isinstance(doc, dict):
        raise SpecError(problems=[Problem("", source, "holds no spec mapping", "write the spec as key: value")])
    return doc


def load_spec_file(path: str | Path) -> ClusterSpec:
    """Load a spec YAML file or a Pulumi stack file."""
    p = Path(path)
    return load_spec(spec_data_from_document(read_yaml(p), str(p)))


def stacks_dir(root: Path | None = None) -> Path:
    """The project's own ``stacks/`` folder: under ``root``, else under the working directory (may not exist)."""
    return (root or Path.cwd()) / "stacks"


def stack_dirs(root: Path | None = None) -> list[Path]:
    """Where stack names are looked up, first match wins: the project's ``stacks/`` (when it exists), then
    the stacks shipped with provision (:func:`provision.spec.shipped.shipped_dir`)."""
    from provision.spec.shipped import shipped_dir

    own = stacks_dir(root)
    shipped = shipped_dir("stacks")
    dirs = [own] if _is_dir(own) else []
    return dirs if dirs and _same_dir(own, shipped) else [*dirs, shipped]


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return False


def _exists(path: Path) -> bool:
    """``path.exists()``, with a name too long or otherwise unusable read as "does not exist"."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def target_path(target: str, root: Path | None = None) -> Path:
    """Resolve a CLI target: a path to a YAML file, or a stack name (the project's, then shipped: stack_dirs)."""
    p = Path(target)
    if p.suffix in (".yaml", ".yml") or _exists(p):
        return p
    dirs = stack_dirs(root)
    for folder in dirs:
        stack_file = folder / f"Pulumi.{target}.yaml"
        if _exists(stack_file):
            return stack_file
    from provision.catalog import suggest

    known = sorted({f.name[len("Pulumi.") : -len(".yaml")] for d in dirs for f in d.glob("Pulumi.*.yaml")})
    hints = suggest(target, known)
    fix = (
        f"did you mean {' or '.join(hints)}?"
        if hints
        else f"use one of: {', '.join(known)} or a YAML path"
        if known
        else f"give a path to a spec YAML file (no stacks found in {', '.join(map(str, dirs))})"
    )
    raise SpecError(problems=[Problem("target", target, "is neither a stack in stacks/ nor a YAML file", fix)])


def stack_of_file(path: Path) -> str | None:
    """The stack a ``Pulumi.<stack>.yaml`` file belongs to; ``None`` for any other file."""
    n = path.name
    if n.startswith("Pulumi.") and n.endswith((".yaml", ".yml")) and n.count(".") >= 2:
        return n[len("Pulumi.") :].rsplit(".", 1)[0]
    return None


def resolve_target(target: Any, root: Path | None) -> tuple[ClusterSpec, Path | None]:
    """(spec, the stack file it came from or ``None``) for a ClusterSpec, a mapping, a file or a stack name.

    Raises:
        SpecError: the target cannot be read, or the spec is invalid.
    """
    if isinstance(target, ClusterSpec):
        return target, None
    if isinstance(target, Mapping):
        return load_spec(dict(target)), None
    if isinstance(target, (str, Path)):
        path = target_path(str(target), root)
        return load_spec_file(path), path if stack_of_file(path) else None
    raise SpecError(
        problems=[
            Problem("target", type(target).__name__, "is not a spec", "pass a ClusterSpec, mapping, path or stack")
        ]
    )


def load_target(target: str, root: Path | None = None) -> ClusterSpec:
    """Load the spec named by a CLI target (stack name or YAML path)."""
    return load_spec_file(target_path(target, root))
