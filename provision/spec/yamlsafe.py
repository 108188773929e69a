"""A bounded YAML reader for spec and stack files.

PyYAML's ``safe_load`` is safe from code execution but not from size: a 472-byte file of
nested aliases expands to billions of nodes, 10,000 nested brackets overflow the stack, a
5,000-digit integer raises ``ValueError`` and a FIFO blocks forever. This reader:

* opens regular files only (no FIFOs, devices, sockets or folders) and reads at most
  :data:`MAX_SPEC_BYTES`;
* refuses nesting deeper than :data:`MAX_DEPTH`, and documents whose alias-expanded size is
  over :data:`MAX_NODES` nodes (aliases are fine, bombs are not);
* refuses a key given twice in one mapping (YAML 1.2 requires unique keys; PyYAML keeps the
  last one silently), and integers longer than :data:`MAX_INT_DIGITS` digits.

Every refusal is a :class:`YamlLimitError` with the line it was found at.
"""

from __future__ import annotations

import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any

import yaml

#: A spec is a few KiB; a 1 MiB file is a mistake (or an attack), never a spec.
MAX_SPEC_BYTES = 1024 * 1024
#: The spec nests about 4 levels; stack files add 2.
MAX_DEPTH = 64
#: Nodes after expanding every alias (a real spec has a few hundred).
MAX_NODES = 100_000
#: Digits of an integer literal; every number a spec takes fits in 20.
MAX_INT_DIGITS = 30


class YamlLimitError(yaml.YAMLError):
    """The document breaks one of this reader's bounds."""

    def __init__(self, problem: str, mark: Any = None, fix: str = "fix it") -> None:
        self.problem = problem
        self.problem_mark = mark
        self.fix = fix
        super().__init__(problem)


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader with a depth cap while composing, unique keys and bounded integers."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlLimitError(
                    f"nests deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,
                    "flatten it: a spec nests 4 levels",
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise YamlLimitError(
                            f"key {key_node.value[:60]!r} appears twice in one mapping "
                            f"(lines {seen[key].line + 1} and {key_node.start_mark.line + 1})",
                            key_node.start_mark,
                            "keep one of them: YAML keeps only the last, silently",
                        )
                    seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> Any:
        digits = sum(c.isdigit() for c in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise YamlLimitError(
                f"has an integer of {digits} digits (at most {MAX_INT_DIGITS})",
                node.start_mark,
                "write a realistic number",
            )
        return super().construct_yaml_int(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def _expanded_size(root: Any) -> None:
    """Refuse a node graph whose alias-expanded size is over :data:`MAX_NODES` (or that is recursive)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()
    # Iterative post-order walk: a deep document must not overflow the Python stack here either.
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            active.discard(key)
            children = _children(node)
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > MAX_NODES:
                raise YamlLimitError(
                    f"expands to more than {MAX_NODES:,} values through aliases (a 'billion laughs' document)",
                    node.start_mark,
                    "write the values out instead of nesting aliases",
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in active:
            raise YamlLimitError("refers to itself through an alias", node.start_mark, "remove the recursive alias")
        active.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def load_bounded(text: str) -> Any:
    """One YAML document from ``text``, within this module's bounds.

    Raises:
        yaml.YAMLError: a syntax error, or :class:`YamlLimitError` for a broken bound.
    """
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    except RecursionError:
        raise YamlLimitError(f"nests deeper than {MAX_DEPTH} levels", None, "flatten it") from None
    finally:
        loader.dispose()


def read_text_bounded(path: Path, limit: int = MAX_SPEC_BYTES) -> str:
    """The text of a regular file of at most ``limit`` bytes.

    Raises:
        OSError: missing, unreadable, not a regular file (``EINVAL`` with a reason), or too large
            (``EFBIG``). UnicodeDecodeError: not UTF-8 text.
    """
    st = os.stat(path)  # follows symlinks: a link to /dev/zero is a device
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(st.st_mode)
            else "a FIFO"
            if stat.S_ISFIFO(st.st_mode)
            else "a device"
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            else "a socket"
            if stat.S_ISSOCK(st.st_mode)
            else "not a regular file"
        )
        raise NotRegularFileError(kind, str(path))
    # O_NONBLOCK: should the path be swapped for a FIFO after the stat, open still returns at once.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError("not a regular file", str(path))
        data = f.read(limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(limit, str(path))
    return data.decode("utf-8")


class NotRegularFileError(OSError):
    """The path is a FIFO, a device, a socket or a folder."""

    def __init__(self, kind: str, path: str) -> None:
        super().__init__(f"is {kind}, not a regular file")
        self.kind = kind
        self.filename = path


class FileTooLargeError(OSError):
    """The file is larger than a spec can be."""

    def __init__(self, limit: int, path: str) -> None:
        super().__init__(f"is larger than {limit // 1024} KiB")
        self.limit = limit
        self.filename = path


#: JSON documents this library reads (state files, config values) nest well under this.
MAX_JSON_DEPTH = 100
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_nesting_depth(text: str) -> int:
    """How deeply ``text`` (JSON) nests arrays and objects, counted without parsing it.

    ``json.loads`` of a 100,000-deep document raises ``RecursionError`` from C, and on CPython
    3.11 that can leave the interpreter's recursion accounting broken ("AST constructor recursion
    depth mismatch" on a later ``compile``), so deep documents are refused before parsing.
    """
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(1 if c in "[{" else -1 for c in brackets), default=0)
