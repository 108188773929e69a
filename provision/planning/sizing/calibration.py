"""Model-FLOPs utilisation calibrated on published training runs, with its error.

The quantity fitted is the *effective* MFU of a whole run: ``6 * N_active * D / (reported GPU-hours *
3600 * dense BF16 peak)``. Reported GPU-hours include everything the run paid for (failures, restarts,
checkpoint stalls, evaluation), so the fit absorbs them; the planner splits it into a throughput MFU and a
goodput factor whose default comes from Llama 3 (see :data:`GOODPUT`).

Model: ``ln(effective MFU) = a_gen + b_gen * ln(N_active / 10B)``, one line per GPU generation (Ampere,
Hopper), fitted by least squares on the runs the issue names (``fit=True`` below). The error is the
residual standard deviation of ``ln MFU`` pooled over the generations; low/high are ``exp(-/+ sigma)``
around the expectation. Runs with ``fit=False`` are held out: tests check that the expected GPU-hours land
within 0.67x-1.5x of what each paper reports.

Adjustments, each from a published figure:

* FP8: achieved throughput x :data:`FP8_SPEEDUP` over BF16 (MFU stays quoted against the BF16 peak);
* cluster size above :data:`SCALE_KNEE_GPUS`: x (gpus / knee) ** :data:`SCALE_EXPONENT` (Llama 3 Table 4);
* Blackwell and AMD CDNA3: no published run in the fit, so the Hopper line is used and the range widened
  by :data:`UNFITTED_WIDENING` (Megatron-Bridge measures B200 at the same fraction of peak as H100).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Llama 3 (arXiv 2407.21783, section 3.3.4): "higher than 90% effective training time" over a 54-day
#: snapshot with 466 job interruptions (419 unexpected). Effective training time = useful / elapsed.
GOODPUT = 0.90
GOODPUT_SOURCE = (
    "Llama 3 herd paper (arXiv 2407.21783) s3.3.4: >90% effective training time, 419 unexpected interruptions "
    "in 54 days"
)

#: Megatron-Bridge 25.11 performance summary (NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md),
#: DeepSeekV3 pre-training on 256 GPUs of DGX-GB200: BF16 782 vs FP8-MX 1003 model TFLOP/s/GPU (1.28x);
#: on DGX-GB300 961 vs 1088 (1.13x). FP8 is not twice as fast: its efficiency is its own.
FP8_SPEEDUP = 1.28
FP8_SOURCE = "Megatron-Bridge 25.11 performance summary: DeepSeekV3 on 256 GB200, BF16 782 vs FP8-MX 1003 TFLOP/s/GPU"

#: Llama 3 Table 4 (405B, BF16): 430 TFLOP/s/GPU on 8,192 H100 and 400 on 16,384 (same TP/PP, DP 64 -> 128).
SCALE_KNEE_GPUS = 8192
SCALE_EXPONENT = math.log2(400 / 430)
#: No published run in the fit beyond this many GPUs: the planner warns above it.
LARGEST_FITTED_GPUS = 16_384
#: Range multiplier (in log space) for generations without a fitted run.
UNFITTED_WIDENING = 1.5
#: Effective MFU is never predicted above this (no published large run reports more).
MFU_CEILING = 0.60

GENERATION = {
    "A100-40GB": "ampere",
    "A100-80GB": "ampere",
    "H100": "hopper",
    "H200": "hopper",
    "H800": "hopper",
    "H20": "hopper",
    "B200": "blackwell",
    "GB200": "blackwell",
    "MI300X": "cdna3",
}
#: Generations with no published run in the fit borrow this line.
BORROWED = {"blackwell": "hopper", "cdna3": "hopper"}

_TABLE15 = "LLaMA paper (Touvron et al. 2023, arXiv 2302.13971) Table 15"


@dataclass(frozen=True)
class PublishedRun:
    """A training run whose paper or model card reports the GPU-hours it took."""

    name: str
    gpu: str
    params: float
    active_params: float
    tokens: float
    gpu_hours: float
    precision: str
    fit: bool
    source: str


RUNS: tuple[PublishedRun, ...] = (
    # ---- fit set: the runs the issue names
    PublishedRun(
        "Llama 2 7B",
        "A100-80GB",
        7e9,
        7e9,
        2.0e12,
        184_320,
        "bf16",
        True,
        "meta-llama/llama MODEL_CARD.md (2.0T tokens, A100-80GB GPU hours)",
    ),
    PublishedRun(
        "Llama 2 13B", "A100-80GB", 13e9, 13e9, 2.0e12, 368_640, "bf16", True, "meta-llama/llama MODEL_CARD.md"
    ),
    PublishedRun(
        "Llama 2 70B", "A100-80GB", 70e9, 70e9, 2.0e12, 1_720_320, "bf16", True, "meta-llama/llama MODEL_CARD.md"
    ),
    PublishedRun(
        "Llama 3 8B",
        "H100",
        8e9,
        8e9,
        15e12,
        1.3e6,
        "bf16",
        True,
        "meta-llama/llama3 MODEL_CARD.md (over 15T tokens, H100-80GB GPU hours)",
    ),
    PublishedRun("Llama 3 70B", "H100", 70e9, 70e9, 15e12, 6.4e6, "bf16", True, "meta-llama/llama3 MODEL_CARD.md"),
    PublishedRun(
        "OPT-175B",
        "A100-80GB",
        175e9,
        175e9,
        180e9,
        809_472,
        "bf16",
        True,
        f"{_TABLE15}; 180B tokens per the OPT paper (arXiv 2205.01068)",
    ),
    PublishedRun(
        "BLOOM-176B",
        "A100-80GB",
        176e9,
        176e9,
        366e9,
        1_082_880,
        "bf16",
        True,
        f"{_TABLE15}; 366B tokens per the BLOOM paper (arXiv 2211.05100)",
    ),
    # ---- held out: not used in the fit
    PublishedRun("LLaMA 7B", "A100-80GB", 6.7e9, 6.7e9, 1.0e12, 82_432, "bf16", False, _TABLE15),
    PublishedRun("LLaMA 13B", "A100-80GB", 13e9, 13e9, 1.0e12, 135_168, "bf16", False, _TABLE15),
    PublishedRun("LLaMA 33B", "A100-80GB", 32.5e9, 32.5e9, 1.4e12, 530_432, "bf16", False, _TABLE15),
    PublishedRun("LLaMA 65B", "A100-80GB", 65.2e9, 65.2e9, 1.4e12, 1_022_362, "bf16", False, _TABLE15),
    PublishedRun(
        "Llama 3.1 8B",
        "H100",
        8e9,
        8e9,
        15e12,
        1.46e6,
        "bf16",
        False,
        "meta-llama/llama-models models/llama3_1/MODEL_CARD.md (~15T tokens)",
    ),
    PublishedRun(
        "Llama 3.1 70B",
        "H100",
        70e9,
        70e9,
        15e12,
        7.0e6,
        "bf16",
        False,
        "meta-llama/llama-models models/llama3_1/MODEL_CARD.md",
    ),
    PublishedRun(
        "Llama 3.1 405B",
        "H100",
        405e9,
        405e9,
        15.6e12,
        30.84e6,
        "bf16",
        False,
        "llama3_1 MODEL_CARD.md (30.84M GPU-h); 15.6T tokens per arXiv 2407.21783",
    ),
    PublishedRun(
        "DeepSeek-V3",
        "H800",
        671e9,
        37e9,
        14.8e12,
        2.664e6,
        "fp8",
        False,
        "DeepSeek-V3 technical report (arXiv 2412.19437): 2664K H800 GPU-hours of pre-training on 14.8T tokens",
    ),
)


@dataclass(frozen=True)
class LineFit:
    """``ln MFU = intercept + slope * ln(N_active / 10B)`` for one generation."""

    generation: str
    intercept: float
    slope: float
    runs: tuple[str, ...]


@dataclass(frozen=True)
class Calibration:
    lines: dict[str, LineFit]
    sigma: float

    def mfu(
        self, gpu: str, active_params: float, precision: str = "bf16", gpus: int | None = None
    ) -> tuple[float, float, float]:
        """(low, expected, high) *effective* MFU against the BF16 peak (goodput included)."""
        gen = GENERATION.get(gpu, "hopper")
        line = self.lines[BORROWED.get(gen, gen)]
        ln = line.intercept + line.slope * math.log(active_params / 1e10)
        expected = math.exp(ln)
        if precision == "fp8":
            expected *= FP8_SPEEDUP
        if gpus is not None and gpus > SCALE_KNEE_GPUS:
            expected *= (gpus / SCALE_KNEE_GPUS) ** SCALE_EXPONENT
        expected = min(expected, MFU_CEILING)
        sigma = self.sigma * (UNFITTED_WIDENING if gen in BORROWED else 1.0)
        return expected * math.exp(-sigma), expected, min(expected * math.exp(sigma), MFU_CEILING)


def effective_mfu(run: PublishedRun, bf16_peak_tflops: float) -> float:
    """What ``run`` achieved: 6 * N_active * D / (GPU-hours * 3600 * BF16 peak)."""
    return 6 * run.active_params * run.tokens / (run.gpu_hours * 3600 * bf16_peak_tflops * 1e12)


def fit(peaks: dict[str, float], runs: tuple[PublishedRun, ...] = RUNS) -> Calibration:
    """Least-squares lines per generation on the ``fit=True`` runs; ``peaks`` maps GPU -> dense BF16 TFLOPS."""
    by_gen: dict[str, list[tuple[float, float, str]]] = {}
    for r in runs:
        if not r.fit:
            continue
        x = math.log(r.active_params / 1e10)
        y = math.log(effective_mfu(r, peaks[r.gpu]))
        by_gen.setdefault(GENERATION[r.gpu], []).append((x, y, r.name))
    lines = {}
    ss = 0.0
    dof = 0
    for gen, pts in by_gen.items():
        n = len(pts)
        mx = sum(p[0] for p in pts) / n
        my = sum(p[1] for p in pts) / n
        sxx = sum((p[0] - mx) ** 2 for p in pts)
        slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx if sxx > 0 else 0.0
        intercept = my - slope * mx
        lines[gen] = LineFit(gen, intercept, slope, tuple(p[2] for p in pts))
        ss += sum((p[1] - intercept - slope * p[0]) ** 2 for p in pts)
        dof += n - 2
    sigma = math.sqrt(ss / dof) if dof > 0 else 0.3
    return Calibration(lines=lines, sigma=sigma)
