"""The mock-mode operations of :class:`~provision.ops.cluster.Cluster`: up, preview and down on local mock state."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from provision.clouds.mocking import Fault
    from provision.engine.progress import OperationResult, Progress
    from provision.spec import ClusterSpec


class MockOperations:
    """Mixed into ``Cluster``, which provides the attributes and methods declared here."""

    stack: str
    _faults: tuple[Fault, ...]
    _outputs: dict[str, Any] | None
    _state: str
    #: The next ``up`` follows a try without stock on the same stack: it replaces that try's node group.
    _fresh_nodes: bool

    if TYPE_CHECKING:  # provided by Cluster and NodeAccess; declared for the type checker only

        @property
        def effective_spec(self) -> ClusterSpec: ...

        def _progress(self, operation: str) -> Progress: ...

        def forget_access(self) -> None: ...

        def _print(self, line: str) -> None: ...

        def plan(self) -> Any: ...

    def _plan_zone(self) -> str | None:
        return self.plan().zone  # type: ignore[no-any-return]

    def _store(self) -> Any:
        from provision.engine.mockstate import MockStore

        return MockStore()

    def _mock_operation(self, operation: str, run: Callable[[], tuple[list[Any], dict[str, Any]]]) -> OperationResult:
        """Run a mock-mode step computation and show its steps through the display engine events use."""
        with self._progress(operation) as p:
            steps, outputs = run()
            p.total_hint = sum(1 for s in steps if s.op != "same")
            for s in steps:
                p.step_started(s.op, s.type, s.name)
                p.step_done(s.op, s.type, s.name, s.keys)
            result = p.result(outputs, mock=True)
            from provision.clouds.replacement import node_replacement_warnings

            result.warnings += node_replacement_warnings(result.steps)  # before the display shows the result
            p.finish(result)
        return result

    def _mock_up(self, apply: bool) -> OperationResult:
        from provision.clouds.failover import capacity_error
        from provision.clouds.replacement import is_node_type
        from provision.engine.mockrun import run_mock
        from provision.engine.mockstate import MockRunFailedError
        from provision.ops.volumes import attached_program_spec

        # An attached volume (storage.shared.volume) is checked before anything exists; the program then
        # creates no filesystem and the outputs record the volume (how `volume delete` finds its users).
        program_spec, volume_outputs = attached_program_spec(self.effective_spec, self._plan_zone(), mock=True)

        def run() -> tuple[list[Any], dict[str, Any]]:
            store = self._store()
            previous = store.load(self.stack)
            replace = frozenset(
                r.key for r in (previous.resources if previous and self._fresh_nodes else []) if is_node_type(r.type)
            )
            try:
                if replace:
                    planned = run_mock(program_spec, self.stack, previous, faults=self._faults, replace=replace)
                else:  # the call shape callers that wrap run_mock know
                    planned = run_mock(program_spec, self.stack, previous, faults=self._faults)
            except MockRunFailedError as e:
                if apply:  # like Pulumi, keep what was created before the failure; `down` removes it
                    store.save(e.state)
                capacity = capacity_error(e.code, e.message)
                if capacity is None and e.listed:  # a node group that lists its stock-out instead of failing with it
                    capacity = self._mock_listed_capacity(e)
                if capacity is not None:
                    raise capacity from None
                raise
            if volume_outputs:
                planned.state.outputs.update(volume_outputs)
            if apply and planned.changed:
                store.save(planned.state)
            return planned.changes, planned.state.outputs

        result = self._mock_operation("up" if apply else "preview", run)
        if apply:
            self._outputs, self._state = dict(result.outputs), "up"
        return result

    def _mock_listed_capacity(self, e: Any) -> Any:
        """As a real ``up`` asks the cloud: the failed node group's own error list, here the mocked cloud's."""
        from provision.clouds.failover import listed_capacity_error
        from provision.clouds.mocking import listed_session

        plan = self.plan()
        resources = [{"type": r.type, "name": r.name, "id": r.id} for r in e.state.resources]
        session = listed_session(plan.cloud, e.listed)
        return listed_capacity_error(plan, resources, f"up of {self.stack!r} failed", e.message, session)

    def _mock_down(self) -> OperationResult:
        from provision.engine.mockstate import destroy_steps

        def run() -> tuple[list[Any], dict[str, Any]]:
            from provision.ops.volumes import retain_at_down

            state = self._store().delete(self.stack)
            if state is None:
                return [], {}
            volume, kept = retain_at_down(state)  # a retained own filesystem becomes volume `volume`
            if volume is not None:
                self._print(f"the retained filesystem is now volume {volume} (provision volume list --mock)")
                state.resources = [r for r in state.resources if r.key not in kept]
            return destroy_steps(state), {}

        result = self._mock_operation("destroy", run)
        self._outputs, self._state = {}, "none"
        self.forget_access()
        return result
