"""What an operation did, and a live display of it while it runs.

:class:`Progress` takes Pulumi engine events (``on_event``) or, in mock mode, the steps the
mocked cloud computed, and keeps the counts: resources planned (from a preview's change
summary or ``resource_pre`` events), done (``res_outputs`` events), failed
(``res_op_failed`` events and error diagnostics). It shows them

* in a terminal: a rich progress bar on stderr;
* in Jupyter: one output area updated in place (``IPython.display`` handle; IPython is
  used only when it is already imported, never required);
* in a log (stderr not a terminal): a progress line every quarter of the work (and at least every
  :data:`_PLAIN_EVERY_S` seconds), then the summary: counts by step and by resource kind, the time
  and what failed; with ``verbose``, one line a finished resource instead (a terminal's bar then
  prints them above it too);
* nowhere with ``display="none"`` (``--json``).

Engine events arrive on the SDK's log-watcher thread, so every update takes a lock.
"""

from __future__ import annotations

import html
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

#: Engine step kinds that change nothing; they are counted but not shown as work.
UNCHANGED = ("same", "read", "refresh")
#: How often the notebook display may redraw (seconds); the final state is always drawn.
_NOTEBOOK_REDRAW_S = 0.2
#: A log display says how far an operation got at least this often (seconds), besides every quarter.
_PLAIN_EVERY_S = 10.0
#: Resource kinds the summary names per step kind before it says how many more there are.
_KINDS_SHOWN = 8

_PAST = {"create": "created", "update": "updated", "delete": "deleted", "replace": "replaced", "same": "unchanged"}
_FUTURE = {"create": "to create", "update": "to update", "delete": "to delete", "replace": "to replace"}


@dataclass(frozen=True)
class ResourceChange:
    """One resource step: ``op`` is the engine's kind (create, update, delete, replace, same, ...).

    Attributes:
        keys: for updates, the input keys that differ (dotted paths in mock mode).
    """

    op: str
    type: str
    name: str
    keys: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "type": self.type, "name": self.name, "keys": list(self.keys)}

    def __str__(self) -> str:
        keys = f" ({', '.join(self.keys)})" if self.keys else ""
        return f"{self.op:<8} {self.type}  {self.name}{keys}"


@dataclass
class OperationResult:
    """What ``up``, ``preview``, ``down`` or ``refresh`` did (or, for a preview, would do).

    Attributes:
        operation: ``up``, ``preview``, ``destroy`` or ``refresh``.
        changes: step kind -> count, including ``same``.
        steps: every step that changes something, in the order seen.
        outputs: the stack outputs after the operation (empty after ``destroy``).
        failures: resource failures and error diagnostics.
        warnings: things the user should know (e.g. pending creates dropped).
    """

    operation: str
    stack: str
    mock: bool
    changes: dict[str, int] = field(default_factory=dict)
    steps: list[ResourceChange] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> int:
        """How many resources this operation changes (everything but ``same``)."""
        return sum(n for op, n in self.changes.items() if op not in UNCHANGED)

    def summary(self) -> str:
        """One line: ``up gcp-a3-64 (mock): 12 created, 0 updated, 0 deleted, 0 unchanged (1.2 s)``."""
        words = _FUTURE if self.operation == "preview" else _PAST
        parts = [f"{self.changes.get(op, 0)} {words[op]}" for op in ("create", "update", "delete")]
        if self.changes.get("replace"):
            parts.append(f"{self.changes['replace']} {words['replace']}")
        parts.append(f"{sum(self.changes.get(op, 0) for op in UNCHANGED)} unchanged")
        mode = " (mock)" if self.mock else ""
        text = f"{self.operation} {self.stack}{mode}: {', '.join(parts)} ({self.seconds:.1f} s)"
        if self.failures:
            text += f"; {len(self.failures)} failed"
        return text

    def by_kind(self) -> dict[str, dict[str, int]]:
        """Step kind -> resource kind (the type's last part, e.g. ``Subnet``) -> count, most first."""
        out: dict[str, dict[str, int]] = {}
        for s in self.steps:
            kinds = out.setdefault(s.op, {})
            kinds[kind_of(s.type)] = kinds.get(kind_of(s.type), 0) + 1
        return {op: dict(sorted(k.items(), key=lambda kv: (-kv[1], kv[0]))) for op, k in out.items()}

    def summary_lines(self) -> list[str]:
        """The summary, then one line per step kind with its counts by resource kind, then each failure."""
        words = _FUTURE if self.operation == "preview" else _PAST
        lines = [self.summary()]
        for op, kinds in self.by_kind().items():
            shown = [f"{n} {k}" for k, n in list(kinds.items())[:_KINDS_SHOWN]]
            more = len(kinds) - _KINDS_SHOWN
            rest = f" and {more} more kinds (--verbose lists them)" if more > 0 else ""
            lines.append(f"  {words.get(op, op)}: {', '.join(shown)}{rest}")
        lines += [f"  failed: {f}" for f in self.failures]
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "stack": self.stack,
            "mock": self.mock,
            "changes": dict(self.changes),
            "steps": [s.as_dict() for s in self.steps],
            "outputs": self.outputs,
            "failures": list(self.failures),
            "warnings": list(self.warnings),
            "seconds": round(self.seconds, 3),
        }

    def __repr__(self) -> str:
        return f"<OperationResult {self.summary()}>"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(s.op)}</td><td><code>{html.escape(s.type)}</code></td>"
            f"<td>{html.escape(s.name)}</td><td>{html.escape(', '.join(s.keys))}</td></tr>"
            for s in self.steps[:200]
        )
        table = f"<table><tr><th>op</th><th>type</th><th>name</th><th>changed</th></tr>{rows}</table>" if rows else ""
        return f"<div><b>{html.escape(self.summary())}</b>{table}</div>"


def kind_of(type_token: str) -> str:
    """A resource type's kind for people: ``aws:ec2/subnet:Subnet`` -> ``Subnet``."""
    return type_token.rsplit(":", 1)[-1] or type_token


def name_from_urn(urn: str) -> str:
    """The logical name at the end of a Pulumi URN (``urn:pulumi:stack::project::type::name``)."""
    return urn.rsplit("::", 1)[-1] if "::" in urn else urn


class Progress:
    """Counts and shows the resource steps of one operation. Thread-safe.

    Use as a context manager around the operation::

        with Progress("up", "gcp-a3-64") as p:
            stack.up(on_event=p.on_event)
        p.result(...)

    Args:
        operation: ``up``, ``preview``, ``destroy`` or ``refresh``.
        stack: the stack name, for titles.
        display: ``auto`` (notebook, terminal or log, whichever applies), ``rich``,
            ``notebook``, ``plain`` or ``none``.
        total: resources expected to change, when a preview told us.
        verbose: show every finished resource (default: progress lines and a summary).
    """

    def __init__(
        self, operation: str, stack: str, *, display: str = "auto", total: int | None = None, verbose: bool = False
    ) -> None:
        self.operation = operation
        self.verbose = verbose
        self.stack = stack
        self.total_hint = total
        self.started = 0
        self.done = 0
        self.changes: dict[str, int] = {}
        self.summary_changes: dict[str, int] | None = None
        self.steps: list[ResourceChange] = []
        self.failures: list[str] = []
        self.errors: list[str] = []
        self.current = ""
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._view = _make_view(display, self)

    # ------------------------------------------------------------------ counts
    @property
    def planned(self) -> int | None:
        """Resources expected to change: the preview's count, or as many as have started."""
        if self.total_hint is None and not self.started:
            return None
        return max(self.total_hint or 0, self.started)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self._t0

    def counts(self) -> dict[str, int]:
        """Step kind -> count: the engine's summary when it sent one, else what was seen."""
        with self._lock:
            return dict(self.summary_changes if self.summary_changes is not None else self.changes)

    # ------------------------------------------------------------------ inputs
    def on_event(self, event: Any) -> None:
        """Consume one ``pulumi.automation.EngineEvent`` (the ``on_event`` callback)."""
        if event.resource_pre_event is not None:
            meta = event.resource_pre_event.metadata
            self.step_started(_op(meta.op), meta.type, name_from_urn(meta.urn))
        elif event.res_outputs_event is not None:
            meta = event.res_outputs_event.metadata
            keys = tuple(meta.diffs or meta.keys or ()) if _op(meta.op) == "update" else ()
            self.step_done(_op(meta.op), meta.type, name_from_urn(meta.urn), keys)
        elif event.res_op_failed_event is not None:
            meta = event.res_op_failed_event.metadata
            self.step_failed(_op(meta.op), meta.type, name_from_urn(meta.urn))
        elif event.diagnostic_event is not None:
            diag = event.diagnostic_event
            self.diagnostic(diag.severity, diag.message, diag.urn or "")
        elif event.summary_event is not None:
            with self._lock:
                self.summary_changes = {_op(k): int(v) for k, v in (event.summary_event.resource_changes or {}).items()}
            self._view.update()

    def step_started(self, op: str, type_: str, name: str) -> None:
        with self._lock:
            if op not in UNCHANGED:
                self.started += 1
                self.current = f"{op} {name}"
        self._view.update()

    def step_done(self, op: str, type_: str, name: str, keys: tuple[str, ...] = ()) -> None:
        with self._lock:
            self.changes[op] = self.changes.get(op, 0) + 1
            if op not in UNCHANGED:
                self.done += 1
                step = ResourceChange(op, type_, name, keys)
                self.steps.append(step)
            else:
                step = None
        if step is not None:
            self._view.step(step)
        self._view.update()

    def step_failed(self, op: str, type_: str, name: str) -> None:
        with self._lock:
            self.failures.append(f"{op} {type_} {name} failed")
        self._view.update()

    def diagnostic(self, severity: str, message: str, urn: str = "") -> None:
        """Keep error diagnostics (the cloud's message) for the failure report."""
        if severity != "error":
            return
        from provision.spec.secrets import scrub

        text = " ".join(scrub(message, blobs=True).split())  # a cloud's message may quote a secret input
        if not text:
            return
        where = name_from_urn(urn)
        with self._lock:
            self.errors.append(f"{where}: {text}" if where else text)
        self._view.update()

    def forget_failures(self) -> None:
        """Drop the failures seen so far (before a retry that may succeed)."""
        with self._lock:
            self.failures.clear()
            self.errors.clear()

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Progress:
        self._view.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._view.stop()

    def result(self, outputs: dict[str, Any] | None = None, *, mock: bool = False) -> OperationResult:
        """What the operation did, from the counts so far."""
        with self._lock:
            failures = [*self.failures, *self.errors]
            steps = list(self.steps)
        return OperationResult(
            operation=self.operation,
            stack=self.stack,
            mock=mock,
            changes=self.counts(),
            steps=steps,
            outputs=dict(outputs or {}),
            failures=failures,
            seconds=self.seconds,
        )

    def finish(self, result: OperationResult) -> None:
        """Show the final summary of ``result``."""
        self._view.final(result)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "title": f"{self.operation} {self.stack}",
                "planned": self.planned,
                "done": self.done,
                "failed": len(self.failures) + len(self.errors),
                "current": self.current,
                "seconds": self.seconds,
            }


def _op(op: Any) -> str:
    return str(getattr(op, "value", op))


# ---------------------------------------------------------------------- views


class _View:
    """No display (``--json`` or ``display="none"``)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def start(self) -> None:
        pass

    def update(self) -> None:
        pass

    def step(self, step: ResourceChange) -> None:
        pass

    def stop(self) -> None:
        pass

    def final(self, result: OperationResult) -> None:
        pass


class _PlainView(_View):
    """A log on stderr: progress lines (or, verbose, one line a finished resource), then the summary."""

    def start(self) -> None:
        s = self.progress.snapshot()
        self._said = (0, time.monotonic())  # (quarter reached, when a line was last printed)
        print(f"{s['title']}: started", file=sys.stderr, flush=True)

    def step(self, step: ResourceChange) -> None:
        if self.progress.verbose:
            print(f"  {step}", file=sys.stderr, flush=True)
            return
        s = self.progress.snapshot()
        quarter = 4 * s["done"] // s["planned"] if s["planned"] else 0
        now = time.monotonic()
        if quarter > self._said[0] or now - self._said[1] >= _PLAIN_EVERY_S:
            self._said = (max(quarter, self._said[0]), now)
            of = f"/{s['planned']}" if s["planned"] else ""
            failed = f", {s['failed']} failed" if s["failed"] else ""
            print(f"  {s['title']}: {s['done']}{of} done{failed} ({s['seconds']:.0f} s)", file=sys.stderr, flush=True)

    def final(self, result: OperationResult) -> None:
        for line in result.summary_lines():
            print(line, file=sys.stderr, flush=True)


class _RichView(_View):
    """A rich progress bar on stderr."""

    def start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True, highlight=False)
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[title]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[current]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        s = self.progress.snapshot()
        self.task = self.bar.add_task("", total=s["planned"], title=s["title"], current="")
        self.bar.start()

    def update(self) -> None:
        from rich.markup import escape

        s = self.progress.snapshot()
        failed = f" [red]{s['failed']} failed[/]" if s["failed"] else ""
        self.bar.update(self.task, total=s["planned"], completed=s["done"], current=escape(s["current"]) + failed)

    def step(self, step: ResourceChange) -> None:
        if self.progress.verbose:
            self.bar.console.print(f"  {step}", markup=False, highlight=False)

    def stop(self) -> None:
        self.bar.stop()

    def final(self, result: OperationResult) -> None:
        from rich.markup import escape

        style = "red" if result.failures else "green"
        first, *rest = result.summary_lines()
        self.console.print(f"[{style}]{escape(first)}[/]")
        for line in rest:
            self.console.print(escape(line).replace("failed:", "[red]failed:[/]", 1))


class _NotebookView(_View):
    """One output area in Jupyter, redrawn in place through an ``IPython.display`` handle."""

    def start(self) -> None:
        from IPython.display import display

        self._last = 0.0
        self.handle = display(_Html(self._html(None)), display_id=True)

    def update(self) -> None:
        now = time.monotonic()
        if now - self._last < _NOTEBOOK_REDRAW_S:
            return
        self._last = now
        self.handle.update(_Html(self._html(None)))

    def final(self, result: OperationResult) -> None:
        self.handle.update(_Html(self._html(result)))

    def _html(self, result: OperationResult | None) -> str:
        s = self.progress.snapshot()
        if result is not None:
            color = "#b00" if result.failures else "#070"
            fails = "".join(f"<li>{html.escape(f)}</li>" for f in result.failures[:20])
            return (
                f"<div style='color:{color}'><b>{html.escape(result.summary())}</b>"
                + (f"<ul>{fails}</ul>" if fails else "")
                + "</div>"
            )
        planned = s["planned"]
        bar = f"<progress value='{s['done']}' max='{planned}'></progress>" if planned else "<progress></progress>"
        failed = f", <span style='color:#b00'>{s['failed']} failed</span>" if s["failed"] else ""
        return (
            f"<div><b>{html.escape(s['title'])}</b> {bar} {s['done']}/{planned if planned is not None else '?'}"
            f"{failed} <code>{html.escape(s['current'])}</code> {s['seconds']:.0f} s</div>"
        )


class _Html:
    """A display object with an HTML and a plain-text form (headless runs keep the text)."""

    def __init__(self, markup: str) -> None:
        self.markup = markup

    def _repr_html_(self) -> str:
        return self.markup

    def __repr__(self) -> str:
        import re

        return html.unescape(re.sub(r"<[^>]+>", " ", self.markup)).strip()


def in_notebook() -> bool:
    """True inside a Jupyter kernel. Looks only at an IPython that is already imported."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001  # a half-initialised IPython is not a notebook
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def _make_view(display: str, progress: Progress) -> _View:
    if display == "auto":
        if in_notebook():
            display = "notebook"
        elif sys.stderr.isatty():
            display = "rich"
        else:
            display = "plain"
    views = {"none": _View, "plain": _PlainView, "rich": _RichView, "notebook": _NotebookView}
    if display not in views:
        raise ValueError(f"display must be one of {', '.join(['auto', *views])}, not {display!r}")
    return views[display](progress)
