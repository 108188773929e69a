"""storage.shared.object_store: the filesystem linked to its bucket (AWS: an FSx data repository association)."""

from __future__ import annotations

from typing import Any

import pytest

from provision.spec import load_spec
from provision.spec.errors import SpecError
from tests.conftest import preview, stack_spec


def aws_spec(link: dict[str, Any] | None) -> Any:
    data = stack_spec("aws-p5-ci").model_dump(mode="json", exclude_none=True)
    if link is not None:
        data["storage"]["shared"]["object_store"] = link
    return load_spec(data)


def of_type(result: Any, suffix: str) -> list[Any]:
    return [r for r in result.resources if r.type.endswith(suffix)]


def test_aws_links_fsx_to_the_bucket_with_import_and_export() -> None:
    result = preview(aws_spec({"uri": "s3://my-train-data/llm", "import_path": "/data", "export_path": "/data/ckpt"}))
    [fs] = of_type(result, ":LustreFileSystem")
    [dra] = of_type(result, ":DataRepositoryAssociation")
    assert dra.inputs["fileSystemId"] == fs.id
    assert dra.inputs["fileSystemPath"] == "/data"
    assert dra.inputs["dataRepositoryPath"] == "s3://my-train-data/llm/"
    assert dra.inputs["batchImportMetaDataOnCreate"] is True
    assert dra.inputs["s3"]["autoImportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    assert dra.inputs["s3"]["autoExportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]


def test_aws_import_only_link_exports_nothing() -> None:
    [dra] = of_type(preview(aws_spec({"uri": "s3://my-train-data"})), ":DataRepositoryAssociation")
    assert dra.inputs["fileSystemPath"] == "/"
    assert "autoExportPolicy" not in dra.inputs["s3"]


def test_no_object_store_no_link() -> None:
    assert of_type(preview(aws_spec(None)), ":DataRepositoryAssociation") == []


def test_bad_links_are_refused_all_at_once() -> None:
    with pytest.raises(SpecError) as e:
        aws_spec({"uri": "gs://other-cloud/x", "import_path": "/data", "export_path": "/elsewhere"})
    fields = {p.path for p in e.value.problems}
    assert fields == {"storage.shared.object_store.uri", "storage.shared.object_store"}
    text = str(e.value)
    assert "s3://" in text and "not inside import_path" in text


def test_a_failed_link_creation_keeps_what_exists_and_down_removes_it(tmp_path: Any, monkeypatch: Any) -> None:
    from provision.engine.mockstate import MockStore
    from provision.ops.cluster import Cluster
    from provision.spec.errors import ProvisionError
    from provision.testing import Fault

    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))
    dra = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
    fault = Fault(code="BadRequest", type_token=dra, message="Unable to access the bucket")
    spec = aws_spec({"uri": "s3://my-train-data/llm", "import_path": "/data"})
    cluster = Cluster(spec, mock=True, faults=[fault], display="none")
    with pytest.raises(ProvisionError) as err:
        cluster.up()
    assert "BadRequest" in str(err.value)
    state = MockStore().load(cluster.stack)
    assert state is not None
    types = {r.type for r in state.resources}
    assert "aws:fsx/lustreFileSystem:LustreFileSystem" in types and dra not in types
    cluster.down()
    assert MockStore().load(cluster.stack) is None


def ali_spec(link: dict[str, Any], **shared: Any) -> Any:
    data = stack_spec("alibaba-gn8-64").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"].update(shared)
    data["storage"]["shared"]["object_store"] = link
    return load_spec(data)


def test_alibaba_links_cpfs_to_oss_through_a_fileset_and_a_data_flow() -> None:
    result = preview(ali_spec({"uri": "oss://my-train-data/ignored-prefix", "import_path": "/data"}))
    [fs] = of_type(result, "nas/fileSystem:FileSystem")
    [fileset] = of_type(result, ":Fileset")
    [flow] = of_type(result, ":DataFlow")
    assert fileset.inputs["fileSystemId"] == fs.id and fileset.inputs["fileSystemPath"] == "/data/"
    assert flow.inputs["fileSystemId"] == fs.id
    assert flow.inputs["fsetId"].startswith("fset-") and flow.inputs["fsetId"] in fileset.id
    assert flow.inputs["sourceStorage"] == "oss://my-train-data"
    assert flow.inputs["throughput"] == 600


def test_strict_alibaba_cloud_refuses_a_bucket_name_the_data_flow_api_refuses() -> None:
    # OSS bucket names may be 3 characters, but CreateDataFlow takes 8-128 (ALIYUN::NAS::DataFlow SourceStorage).
    with pytest.raises(Exception) as e:  # noqa: PT011  # the engine wraps the strict cloud's error
        preview(ali_spec({"uri": "oss://short", "import_path": "/data"}))
    assert "sourceStorage" in str(e.value) and "8-128" in str(e.value)


@pytest.mark.parametrize("cloud_stack", ["gcp-a3-ci", "azure-ndh100-ci"])
def test_clouds_without_a_link_refuse_object_store(cloud_stack: str) -> None:
    data = stack_spec(cloud_stack).model_dump(mode="json", exclude_none=True)
    scheme = {"gcp-a3-ci": "gs://my-train-data", "azure-ndh100-ci": "https://acct1.blob.core.windows.net/data"}
    data["storage"]["shared"]["object_store"] = {"uri": scheme[cloud_stack]}
    with pytest.raises(SpecError) as e:
        load_spec(data)
    assert [p.path for p in e.value.problems] == ["storage.shared.kind"]


def test_alibaba_nas_cannot_be_linked() -> None:
    with pytest.raises(SpecError) as e:
        ali_spec({"uri": "oss://my-train-data"}, kind="nas", tier="Capacity", size_gib=1024)
    assert [p.path for p in e.value.problems] == ["storage.shared.kind"] and "set storage.shared.kind: cpfs" in str(
        e.value
    )


def test_alibaba_export_path_is_refused_until_data_flow_tasks_exist() -> None:
    with pytest.raises(SpecError) as e:
        ali_spec({"uri": "oss://my-train-data", "import_path": "/data", "export_path": "/data/ckpt"})
    assert [p.path for p in e.value.problems] == ["storage.shared.object_store.export_path"]


@pytest.mark.parametrize("link", [{"uri": "oss://my-train-data"}, {"uri": "oss://my-train-data", "import_path": "/"}])
def test_alibaba_link_at_the_root_is_refused_before_the_strict_cloud_refuses_its_fileset(link: dict[str, Any]) -> None:
    """A CPFS fileset cannot be the file system's root: the default import_path / is a spec error, named at plan."""
    with pytest.raises(SpecError) as e:
        ali_spec(link)
    assert [p.path for p in e.value.problems] == ["storage.shared.object_store.import_path"]
    assert "set import_path to a folder" in str(e.value)


def test_strict_aws_cloud_checks_the_data_repository_associations_inputs() -> None:
    """The AWS link's inputs are held to botocore's CreateDataRepositoryAssociation model (events enum, lengths)."""
    from strict_helpers import one, register, violations_of

    dra = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
    good = {
        "fileSystemId": "fs-0123456789abcdef0",
        "fileSystemPath": "/data",
        "dataRepositoryPath": "s3://my-train-data/llm/",
        "batchImportMetaDataOnCreate": True,
        "s3": {"autoImportPolicy": {"events": ["NEW", "CHANGED", "DELETED"]}},
    }
    register(dra, "ok", good)
    bad = violations_of(dra, "bad", {**good, "s3": {"autoImportPolicy": {"events": ["NEW", "RENAMED"]}}})
    assert "must be one of NEW, CHANGED, DELETED" in str(one(bad, "s3.autoImportPolicy.events[]"))
    short = violations_of(dra, "bad", {**good, "dataRepositoryPath": "s3"})
    assert any(v.field == "dataRepositoryPath" and "3-4357" in str(v) for v in short)
