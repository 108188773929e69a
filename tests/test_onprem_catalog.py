"""The on-premises catalog: every figure has a source URL and a date; unknowns are null; the data is usable.

Two layers of checking: the row models refuse an uncovered figure at load time (tested with a mutated row), and
this file re-checks every row of the shipped data independently of the models.
"""

from __future__ import annotations

import copy
from datetime import date
from importlib import resources

import pytest
import yaml
from pydantic import ValidationError

from provision.catalog import load_catalog
from provision.catalog.onprem import ONPREM_FILES, OnpremFile, load_onprem

REQUIRED_SERVERS = {
    "dgx-h100",
    "dgx-h200",
    "dgx-a100",
    "dell-xe9680-h100",
    "dell-xe9680-mi300x",
    "dell-xe9640-h100",
    "hpe-xd670-h100",
    "lenovo-sr680a-v3-h200",
    "lenovo-sr670-v2-a100",
    "inspur-nf5688m7-h100",
    "supermicro-sys-821ge-tnhr-h100",
    "supermicro-sys-821ge-tnhr-h200",
    "supermicro-as-8125gs-tnmr2-mi300x",
    "huawei-atlas-800t-a2",
    "cambricon-mlu370-x8-server",
}


def _raw(name: str) -> dict:
    text = resources.files("provision.catalog").joinpath("data", name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


@pytest.fixture(scope="module")
def cat():
    return load_onprem()


def test_every_figure_of_every_row_has_a_source_url_and_a_date(cat) -> None:
    rows = cat.rows()
    assert len(rows) >= 30
    for row in rows:
        covered: dict[str, list] = {}
        for src in row.sources:
            assert src.url.startswith(("https://", "http://")), (row.row_id(), src.url)
            assert isinstance(src.retrieved, date) and date(2026, 1, 1) <= src.retrieved <= date(2026, 12, 31)
            for field in src.covers:
                covered.setdefault(field, []).append(src)
        for field, value in row.figures().items():
            if value in (None, ()):
                continue
            assert field in covered, f"{row.row_id()}.{field} = {value!r} has no source"


def test_a_figure_without_a_source_is_refused_at_load() -> None:
    doc = _raw("onprem-servers.yaml")
    bad = copy.deepcopy(doc)
    dgx = next(s for s in bad["servers"] if s["id"] == "dgx-h100")
    for src in dgx["sources"]:
        src["covers"] = [f for f in src["covers"] if f != "power_max_kw"] or ["name"]
    with pytest.raises(ValidationError, match=r"dgx-h100: figures without a source: \['power_max_kw'\]"):
        OnpremFile.model_validate(bad)
    # The same row with the figure set to null (unknown) loads: unknowns need no source.
    dgx["power_max_kw"] = None
    OnpremFile.model_validate(bad)


def test_a_source_covering_a_field_that_does_not_exist_is_refused() -> None:
    bad = copy.deepcopy(_raw("onprem-network.yaml"))
    bad["switches"][0]["sources"][0]["covers"].append("port_count")
    with pytest.raises(ValidationError, match="cover fields that do not exist"):
        OnpremFile.model_validate(bad)


def test_a_source_without_a_url_is_refused() -> None:
    bad = copy.deepcopy(_raw("onprem-storage.yaml"))
    bad["storage"][0]["sources"][0]["url"] = "NetApp docs"
    with pytest.raises(ValidationError, match="must start with https://"):
        OnpremFile.model_validate(bad)


def test_every_file_is_dated_and_ids_are_unique(cat) -> None:
    for name in ONPREM_FILES:
        doc = _raw(name)
        assert date.fromisoformat(doc["version"]) <= date(2026, 12, 31)
    ids = [r.row_id() for r in cat.rows()]
    assert len(ids) == len(set(ids))


def test_the_servers_the_issue_names_are_in_the_catalog(cat) -> None:
    ids = {s.id for s in cat.servers}
    assert ids >= REQUIRED_SERVERS
    vendors = {s.accelerator_vendor for s in cat.servers}
    assert vendors == {"nvidia", "amd", "huawei", "cambricon"}


def test_domestic_alternatives_carry_compute_memory_and_a_software_note(cat) -> None:
    atlas = cat.server("huawei-atlas-800t-a2")
    mlu = cat.server("cambricon-mlu370-x8-server")
    assert atlas and mlu
    assert atlas.software == "cann" and "CANN" in atlas.software_note and "NCCL" in atlas.software_note
    assert mlu.software == "neuware" and "NeuWare" in mlu.software_note
    assert atlas.accelerator_memory_gb == 64 and mlu.accelerator_memory_gb == 48
    assert mlu.accelerator_bf16_dense_tflops == 96
    # Sources disagree on the 910B's FP16 figure: the row takes Huawei's own 910 figure, sourced, and says why.
    assert atlas.accelerator_bf16_dense_tflops == 256 and "disagree" in atlas.notes
    assert atlas.source_urls("accelerator_bf16_dense_tflops")


def test_nvidia_server_accelerators_resolve_in_the_sizing_catalog(cat) -> None:
    sizing = load_catalog()
    for s in cat.servers:
        if s.accelerator_vendor in ("nvidia", "amd"):
            gpu = sizing.gpu(s.accelerator)
            assert gpu is not None, s.id
            if s.accelerator_bf16_dense_tflops is not None:
                assert s.accelerator_bf16_dense_tflops == pytest.approx(gpu.bf16_dense_tflops), s.id


def test_switch_radix_reads_the_port_modes(cat) -> None:
    qm9700 = cat.switch("nvidia-qm9700")
    sn5600 = cat.switch("nvidia-sn5600")
    assert qm9700 and sn5600
    assert qm9700.radix(400) == 64 and qm9700.radix(200) == 128
    assert sn5600.radix(400) == 128 and sn5600.radix(800) == 64
    assert qm9700.radix(800) is None
    # 32 twin-port cages carry the 64 NDR ports.
    assert qm9700.cages * 2 == qm9700.radix(400)


def test_assumptions_the_planner_reads_exist_and_are_plausible(cat) -> None:
    for aid, low, high in (
        ("rack_power_budget_kw", 10, 200),
        ("servers_per_rack_max", 1, 16),
        ("air_cooling_limit_kw", 20, 100),
        ("typical_draw_fraction", 0.3, 1),
        ("support_percent_per_year", 1, 50),
        ("commit_discount_3y_aws", 0, 1),
        ("commit_discount_3y_gcp", 0, 1),
        ("commit_discount_3y_azure", 0, 1),
    ):
        assert low <= cat.assumption(aid).value <= high, aid
    with pytest.raises(KeyError):
        cat.assumption("commit_discount_3y_alibaba")


def test_onprem_software_matches_the_node_images_compatibility_data() -> None:
    from provision.planning.images import images_dir

    onprem = yaml.safe_load((images_dir() / "onprem.yaml").read_text(encoding="utf-8"))["images"]
    azure = {e["name"]: e for e in yaml.safe_load((images_dir() / "azure.yaml").read_text(encoding="utf-8"))["images"]}
    by_name = {e["name"]: e for e in onprem}
    for entry in onprem:
        assert entry["match"] and entry["versions"] and entry["source"].strip(), entry["name"]
    ib = by_name["nvidia-hopper-infiniband"]["versions"]
    assert {"driver", "cuda", "cudnn", "nccl", "doca_ofed", "hpcx", "sharp"} <= set(ib)
    # The fabric stack is the one the InfiniBand cloud image pins (Azure HPC image), not a second opinion.
    assert ib["doca_ofed"] == azure["ubuntu-hpc-2204"]["versions"]["doca_ofed"]
    assert ib["hpcx"] == azure["ubuntu-hpc-2204"]["versions"]["hpcx"]
    amd = by_name["amd-instinct-rocm"]["versions"]
    assert amd["rocm"] == azure["ubuntu-hpc-2204-rocm"]["versions"]["rocm"]
    assert amd["rccl"] == azure["ubuntu-hpc-2204-rocm"]["versions"]["rccl"]
    # The fabric manager branch follows the driver branch.
    assert ib["fabricmanager"].endswith(ib["driver"].split(".")[0])
