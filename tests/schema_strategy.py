"""Hypothesis strategies for documents of a JSON Schema (the spec's, from pydantic).

hypothesis-jsonschema would be the library for this, but its latest release (0.23.1) fails on
current Hypothesis (``'many' object has no attribute 'more'`` in ``from_object_schema``), so
this covers the subset pydantic emits: ``$ref``/``$defs``, ``anyOf``, ``enum``/``const``,
objects (``properties``, ``required``, ``patternProperties``, ``additionalProperties``),
strings (``pattern``, lengths), integers and numbers (bounds), booleans, arrays, ``null``.

``overrides`` maps a dotted path to an extra strategy mixed into that field (e.g. real region
names, so that some generated specs get past the catalog and reach planning and rendering).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st


def from_schema(
    schema: Mapping[str, Any], overrides: Mapping[str, st.SearchStrategy[Any]] | None = None, path: str = ""
) -> st.SearchStrategy[Any]:
    """Documents of ``schema`` (or, with ``path``, of the sub-schema of that top-level property)."""
    defs = schema.get("$defs", {})
    extra = dict(overrides or {})

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in node:
            node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **{k: v for k, v in node.items() if k != "$ref"}}
        return node

    def build(node: Mapping[str, Any], path: str) -> st.SearchStrategy[Any]:
        node = resolve(node)
        base = _build(node, path)
        return st.one_of(base, extra[path]) if path in extra else base

    def _build(node: Mapping[str, Any], path: str) -> st.SearchStrategy[Any]:
        if "anyOf" in node:
            return st.one_of([build(o, path) for o in node["anyOf"]])
        if "enum" in node:
            return st.sampled_from(list(node["enum"]))
        if "const" in node:
            return st.just(node["const"])
        kind = node.get("type")
        if kind == "object":
            props = node.get("properties", {})
            required = set(node.get("required", []))
            fixed = st.fixed_dictionaries(
                {k: build(v, _join(path, k)) for k, v in props.items() if k in required},
                optional={k: build(v, _join(path, k)) for k, v in props.items() if k not in required},
            )
            extras = []
            for pattern, sub in (node.get("patternProperties") or {}).items():
                keys = st.from_regex(pattern, fullmatch=True).filter(lambda k: len(k) <= 64)
                extras.append(st.dictionaries(keys, build(sub, _join(path, "*")), max_size=3))
            more = node.get("additionalProperties")
            if isinstance(more, Mapping):
                extras.append(st.dictionaries(st.text(max_size=12), build(more, _join(path, "*")), max_size=3))
            if not extras:
                return fixed
            return st.builds(lambda a, b: {**b, **a}, fixed, st.one_of(extras))
        if kind == "string":
            if "pattern" in node:
                return st.from_regex(node["pattern"], fullmatch=True).filter(lambda s: len(s) <= 300)
            return st.text(min_size=node.get("minLength", 0), max_size=min(node.get("maxLength", 40), 40))
        if kind == "integer":
            low = node.get("minimum", node.get("exclusiveMinimum", -(2**40)) + ("exclusiveMinimum" in node))
            high = node.get("maximum", node.get("exclusiveMaximum", 2**40) - ("exclusiveMaximum" in node))
            return st.integers(low, high)
        if kind == "number":
            return st.floats(node.get("minimum"), node.get("maximum"), allow_nan=False, allow_infinity=False)
        if kind == "boolean":
            return st.booleans()
        if kind == "array":
            items = node.get("items") or {}
            max_size = min(node.get("maxItems", 4), 4)
            return st.lists(build(items, _join(path, "[]")), min_size=node.get("minItems", 0), max_size=max_size)
        if kind == "null":
            return st.none()
        return st.none()  # an unconstrained value: pydantic validates what it is given

    return build(schema["properties"][path], path) if path else build(schema, "")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
