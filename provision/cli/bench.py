"""``provision bench TARGET --params 70B``: a training microbenchmark on the cluster, measured against the plan.

provision bench llm-train --params 70B --seq-len 4096        # tokens/s, TFLOPS, MFU, memory, comm share
provision bench llm-train --params 70B --json > bench.json   # then: provision size ... --mfu-from bench.json
provision bench t1 --mock --params 7B --inject 1:slow        # rehearse: a mocked node reports half the speed

Exits 0 when the benchmark ran (1 when a node is slow or the MFU is below the planner's range), 2 for bad input.
"""

from __future__ import annotations

from typing import Any

import typer

from provision.cli.common import JsonOpt, TargetArg, console, emit_json, run_command

_EPILOG = "Example: provision bench llm-train --params 70B --json > bench.json; provision size --mfu-from bench.json"


def bench(
    target: str = TargetArg,
    params: str = typer.Option(..., "--params", help="Model parameters: 70B, 7e9, 500M.", show_default=False),
    tokens: str | None = typer.Option(
        None, "--tokens", help="The run's tokens for days and cost (default 20 per parameter, Chinchilla)."
    ),
    seq_len: int = typer.Option(4096, "--seq-len", metavar="TOKENS", help="Sequence length."),
    precision: str = typer.Option(
        "bf16", "--precision", help="bf16 (fp8 is refused until the script uses Transformer Engine)."
    ),
    layout: str = typer.Option("auto", "--layout", help="auto (the planner's, FSDP measured) or TPxPPxDP (1x1xN)."),
    micro_batch: int = typer.Option(1, "--micro-batch", metavar="N", help="Sequences per GPU per step."),
    checkpointing: bool = typer.Option(True, "--checkpointing/--no-checkpointing", help="Activation checkpointing."),
    warmup: int = typer.Option(2, "--warmup", metavar="N", help="Warm-up steps (not measured)."),
    steps: int = typer.Option(5, "--steps", metavar="N", help="Measured steps."),
    mock: bool = typer.Option(False, "--mock", help="The mocked cluster: its nodes report the fake's figures."),
    inject: list[str] = typer.Option(
        None, "--inject", help="With --mock: RANK:slow (half speed) or RANK:memory (near the GPU's memory). Repeatable."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Run a short training benchmark of the model on the cluster; report measured vs planned MFU, days and cost."""
    from provision.ops.bench import BenchRequest, run_bench

    def go() -> Any:
        from provision.ops.cluster import Cluster

        req = BenchRequest(
            params=params,
            tokens=tokens,
            seq_len=seq_len,
            precision=precision,
            layout=layout,
            micro_batch=micro_batch,
            checkpointing="on" if checkpointing else "off",
            warmup=warmup,
            steps=steps,
            inject=tuple(inject or ()),
        )
        return run_bench(Cluster(target, mock=mock, display="none"), req)

    report = run_command(as_json, go)
    if as_json:
        emit_json(report.as_dict())
    else:
        out = console()
        for line in report.lines():
            out.print(line, markup=False, soft_wrap=True)
    raise typer.Exit(1 if report.findings else 0)


def register(app: typer.Typer) -> None:
    app.command(epilog=_EPILOG)(bench)
