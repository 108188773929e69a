"""storage.shared.object_store on the four clouds: the link and its access grant, scoped to the one bucket or account
(never a project, resource group or subscription), checked by the strict mocked cloud; GCP's import after `up`
and its export at `run --save-checkpoint` through the faked transfer API."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from provision.spec import load_spec
from provision.spec.errors import SpecError
from tests.conftest import preview, stack_spec

ACCOUNT = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/data-rg/providers/Microsoft.Storage/"
    "storageAccounts/acct1"
)
AZURE_LINK = {
    "uri": "https://acct1.blob.core.windows.net/data/llm",
    "import_path": "/llm",
    "account_id": ACCOUNT,
    "logging_container": "data-logs",
    "hpc_cache_principal_id": "11111111-2222-3333-4444-555555555555",
}
LUSTRE_AGENT = r"^serviceAccount:service-[0-9]+@gcp-sa-lustre\.iam\.gserviceaccount\.com$"


@pytest.fixture(autouse=True)
def _own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_HOME", str(tmp_path / "home"))


def linked(stack: str, link: dict[str, Any], name: str | None = None, **shared: Any) -> Any:
    data = stack_spec(stack).model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"].update(shared)
    data["storage"]["shared"]["object_store"] = link
    if name:
        data["name"] = name
    return load_spec(data)


def of_type(result: Any, suffix: str) -> list[Any]:
    return [r for r in result.resources if r.type.endswith(suffix)]


# ------------------------------------------------------------------ AWS


def test_aws_link_grants_the_bucket_to_the_file_systems_own_role_only() -> None:
    result = preview(linked("aws-p5-ci", {"uri": "s3://my-train-data/llm", "import_path": "/data"}))
    [fs] = of_type(result, ":LustreFileSystem")
    [dra] = of_type(result, ":DataRepositoryAssociation")
    grant = result.outputs["object_store"]["grant"]
    account = fs.outputs["arn"].split(":")[4]
    role = f"aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/AWSServiceRoleForFSxS3Access_{fs.id}"
    assert grant == {"principal": f"arn:aws:iam::{account}:role/{role}", "scope": "bucket my-train-data"}
    assert result.outputs["object_store"]["association"] == dra.id
    # No bucket policy and no node policy names the bucket: the file system's role is the only grantee.
    assert of_type(result, ":BucketPolicy") == []
    assert not [r for r in result.resources if r.type.startswith("aws:iam/") and "my-train-data" in str(r.inputs)]


# ------------------------------------------------------------------ Azure


def test_azure_link_grants_two_roles_on_the_account_before_the_file_system() -> None:
    result = preview(linked("azure-ndh100-64", AZURE_LINK), accounting=True)
    [fs] = of_type(result, ":AmlFilesystem")
    grants = [r for r in of_type(result, ":RoleAssignment") if r.inputs["principalId"] == AZURE_LINK[
        "hpc_cache_principal_id"]]  # fmt: skip
    roles = {r.inputs["roleDefinitionId"].rsplit("/", 1)[-1] for r in grants}
    assert roles == {"17d1049b-9a84-46fb-8f53-869881c3d3ab", "ba92f5b4-2d11-453d-a403-e96b0029c9fe"}
    for grant in grants:
        assert grant.inputs["scope"] == ACCOUNT  # the account: not its resource group, not the subscription
        assert grant.inputs["principalType"] == "ServicePrincipal"
        assert grant.urn in fs.dependencies  # created before the file system, which fails without them
    assert [leaf for leaf in result.accounting if leaf.status == "unchecked"] == []
    assert result.outputs["object_store"]["grant"]["scope"] == f"storage account {ACCOUNT}"


def test_strict_azure_refuses_an_hsm_file_system_without_its_grants_and_a_wide_scope() -> None:
    from provision.clouds.mocking import strict_check

    container = f"{ACCOUNT}/blobServices/default/containers/data"
    hsm = {"settings": {"container": container, "loggingContainer": container + "-logs", "importPrefix": "/"}}
    bad = strict_check("azure-native:storagecache:AmlFilesystem", {"hsm": hsm})
    [missing] = [v for v in bad if v.field == "hsm.settings.container"]
    assert "Storage Account Contributor and Storage Blob Data Contributor" in missing.rule
    assert "amlfs-prerequisites" in missing.source
    wide = strict_check(
        "azure-native:authorization:RoleAssignment",
        {
            "scope": "/subscriptions/00000000-0000-0000-0000-000000000000",
            "roleDefinitionId": "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/"
            "roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe",
        },
    )
    assert any(v.field == "scope" and "storage account itself" in v.rule for v in wide)


def test_azure_link_needs_the_principal_id() -> None:
    link = {k: v for k, v in AZURE_LINK.items() if k != "hpc_cache_principal_id"}
    with pytest.raises(SpecError) as e:
        linked("azure-ndh100-64", link)
    assert [p.path for p in e.value.problems] == ["storage.shared.object_store.hpc_cache_principal_id"]
    assert "HPC Cache Resource Provider" in str(e.value)


# ------------------------------------------------------------------ Alibaba


def test_alibaba_link_records_its_bucket_only_grant() -> None:
    result = preview(linked("alibaba-gn8-64", {"uri": "oss://my-train-data/x", "import_path": "/data"}))
    [flow] = of_type(result, ":DataFlow")
    link = result.outputs["object_store"]
    assert link["data_flow"] == flow.id
    assert link["grant"]["scope"] == "bucket my-train-data, which must carry the tag cpfs-dataflow=true"
    # No RAM policy of ours names the bucket: the data-flow role is Alibaba's, limited by the bucket's tag.
    assert not [r for r in result.resources if r.type.startswith("alicloud:ram/") and "my-train-data" in str(r.inputs)]


# ------------------------------------------------------------------ GCP: the graph


def test_gcp_lustre_link_grants_the_service_agent_read_on_the_bucket_only() -> None:
    import re

    result = preview(linked("gcp-a3-64", {"uri": "gs://my-train-data/llm"}), accounting=True)
    [agent] = of_type(result, ":ServiceIdentity")
    [grant] = of_type(result, ":BucketIAMMember")
    [fs] = of_type(result, "lustre/instance:Instance")
    assert agent.inputs["service"] == "lustre.googleapis.com"
    assert grant.inputs["bucket"] == "my-train-data"
    assert grant.inputs["role"] == "roles/storage.objectViewer"
    assert re.match(LUSTRE_AGENT, grant.inputs["member"]) and grant.inputs["member"] == agent.outputs["member"]
    # Nothing on the project names the agent: the grant is the bucket's.
    assert not [r for r in of_type(result, "projects/iAMMember:IAMMember") if "gcp-sa-" in r.inputs["member"]]
    link = result.outputs["object_store"]
    assert link["instance"] == fs.outputs["name"] and link["grant"]["scope"] == "bucket my-train-data"
    assert [leaf for leaf in result.accounting if leaf.status == "unchecked"] == []


def test_gcp_link_with_export_gets_object_user_and_parallelstore_storage_admin() -> None:
    lustre = preview(linked("gcp-a3-64", {"uri": "gs://my-train-data", "export_path": "/out"}))
    assert [g.inputs["role"] for g in of_type(lustre, ":BucketIAMMember")] == ["roles/storage.objectUser"]
    daos = preview(linked("gcp-a3high-16", {"uri": "gs://my-train-data"}))
    [agent] = of_type(daos, ":ServiceIdentity")
    [grant] = of_type(daos, ":BucketIAMMember")
    assert agent.inputs["service"] == "parallelstore.googleapis.com"
    assert grant.inputs["role"] == "roles/storage.admin" and "@gcp-sa-parallelstore." in grant.inputs["member"]


def test_strict_gcp_checks_the_bucket_grant() -> None:
    from provision.clouds.mocking import strict_check

    agent = "serviceAccount:service-123456789012@gcp-sa-lustre.iam.gserviceaccount.com"
    bad = strict_check(
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        {"bucket": "gs://my-train-data/llm", "role": "roles/storage.admin", "member": agent},
    )
    assert {v.field for v in bad} == {"bucket", "role"}
    assert all("cloud.google.com" in v.source for v in bad)
    assert strict_check("gcp:storage/bucketIAMMember:BucketIAMMember", {"bucket": "goog-data", "role": "roles/"
                        "storage.objectViewer", "member": agent})[0].field == "bucket"  # fmt: skip
    wide = strict_check(
        "gcp:projects/iAMMember:IAMMember", {"project": "p", "role": "roles/storage.objectViewer", "member": agent}
    )
    assert [v.field for v in wide] == ["role"] and "not on the whole project" in wide[0].rule
    assert [v.field for v in strict_check("gcp:projects/serviceIdentity:ServiceIdentity", {"service": "lustre"})] == [
        "service"
    ]


def test_gcp_link_problems() -> None:
    with pytest.raises(SpecError) as e:
        linked("gcp-a3-64", {"uri": "gs://my-train-data", "import_path": "/data"})
    assert [p.path for p in e.value.problems] == ["storage.shared.object_store.import_path"]
    assert "must already exist" in str(e.value)


def test_gcp_grant_changes_replace_it_as_the_provider_does() -> None:
    from provision.clouds.replacement import replacing_keys

    grant, agent = "gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:projects/serviceIdentity:ServiceIdentity"
    assert replacing_keys(grant, ["bucket", "role", "member"]) == ("bucket", "role", "member")
    assert replacing_keys(agent, ["service"]) == ("service",)


# ------------------------------------------------------------------ GCP: import after up, export of a checkpoint


@pytest.fixture
def transfers(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The faked transfer API every call of the test goes to (no network)."""
    from provision.clouds.gcp.datalink import MockTransfers
    from provision.ops import datalink

    fake = MockTransfers()
    monkeypatch.setattr(datalink, "transfer_client", lambda cluster, kind: fake)
    return fake


def test_gcp_up_imports_the_bucket_after_the_stack_exists(transfers: Any) -> None:
    from provision.ops.cluster import Cluster

    cluster = Cluster(linked("gcp-a3-64", {"uri": "gs://my-train-data/llm"}, name="gcs-in"), mock=True, display="none")
    result = cluster.up()
    [(method, instance, body)] = transfers.calls
    assert method == "importData"
    assert instance == result.outputs["object_store"]["instance"]
    assert body["gcsPath"] == {"uri": "gs://my-train-data/llm/"} and body["lustrePath"] == {"path": "/"}
    assert result.outputs["object_store"]["imported"] is True
    cluster.down()


def test_gcp_import_failure_is_a_clear_error_and_down_removes_everything() -> None:
    from provision.engine.mockstate import MockStore
    from provision.ops.cluster import Cluster
    from provision.spec.errors import CloudError
    from provision.testing import Fault

    fault = Fault(code="PERMISSION_DENIED", type_token="lustre.projects.locations.instances.importData", message="no")
    spec = linked("gcp-a3-64", {"uri": "gs://my-train-data/llm"}, name="gcs-fail")
    cluster = Cluster(spec, mock=True, faults=[fault], display="none")
    with pytest.raises(CloudError) as err:
        cluster.up()
    assert err.value.code == "PERMISSION_DENIED"
    assert "import of gs://my-train-data/llm into / after up failed" in str(err.value)
    assert "provision up gcs-fail" in str(err.value)
    state = MockStore().load(cluster.stack)
    assert state is not None and "gcp:storage/bucketIAMMember:BucketIAMMember" in {r.type for r in state.resources}
    cluster.down()
    assert MockStore().load(cluster.stack) is None


def test_a_failed_grant_creation_keeps_what_exists_and_down_removes_it() -> None:
    from provision.engine.mockstate import MockStore
    from provision.ops.cluster import Cluster
    from provision.spec.errors import ProvisionError
    from provision.testing import Fault

    grant = "gcp:storage/bucketIAMMember:BucketIAMMember"
    fault = Fault(code="403", type_token=grant, message="does not have storage.buckets.setIamPolicy access")
    cluster = Cluster(linked("gcp-a3-64", {"uri": "gs://my-train-data"}, name="gcs-grant"), mock=True,
                      faults=[fault], display="none")  # fmt: skip
    with pytest.raises(ProvisionError) as err:
        cluster.up()
    assert "403" in str(err.value)
    state = MockStore().load(cluster.stack)
    assert state is not None and grant not in {r.type for r in state.resources}
    cluster.down()
    assert MockStore().load(cluster.stack) is None


def test_gcp_save_checkpoint_exports_the_copy_with_export_data(transfers: Any) -> None:
    from provision.ops.checkpoint_nodes import save_checkpoint
    from provision.ops.checkpoints import checkpoint_dir
    from provision.ops.cluster import Cluster

    spec = linked("gcp-a3-64", {"uri": "gs://my-train-data/llm", "export_path": "/out"}, name="gcs-ck")
    Cluster(spec, mock=True, display="none").up()
    cluster = Cluster("gcs-ck", mock=True, display="none")
    folder = Path(str(checkpoint_dir(cluster)))
    for step, age in (("step-1", 600), ("step-2", 0)):
        (folder / step).mkdir(parents=True)
        when = time.time() - age
        os.utime(folder / step, (when, when))
    saved = save_checkpoint(cluster)
    assert saved["error"] is None and saved["uri"] == "gs://my-train-data/llm/out/checkpoints/gcs-ck/step-2"
    method, _, body = transfers.calls[-1]
    assert method == "exportData"
    assert body["lustrePath"] == {"path": "/out/checkpoints/gcs-ck/step-2"}
    assert body["gcsPath"] == {"uri": "gs://my-train-data/llm/out/checkpoints/gcs-ck/step-2/"}
    cluster.down()


def test_transfer_reports_a_refused_call_and_a_failed_operation() -> None:
    from provision.clouds.gcp.datalink import MockTransfers, TransferError, transfer

    class Refused:
        resp = type("Resp", (), {"status": 403})()
        reason = "caller lacks lustre.instances.importData"

        def __str__(self) -> str:
            return self.reason

    class Client(MockTransfers):
        def importData(self, name: str, body: dict[str, Any]) -> Any:  # noqa: N802
            raise type("HttpError", (Exception,), {"resp": Refused.resp, "reason": Refused.reason})()

    with pytest.raises(TransferError) as refused:
        transfer(
            Client(), "managed-lustre", "projects/p/locations/z/instances/i", "importData", {}, sleep=lambda _: None
        )
    assert refused.value.code == "403" and "lustre.instances.importData" in refused.value.message
    lines: list[str] = []
    with pytest.raises(TransferError) as failed:
        transfer(MockTransfers(fail={"exportData": ("NOT_FOUND", "bucket gone")}), "parallelstore",
                 "projects/p/locations/z/instances/i", "exportData", {}, progress=lines.append,
                 sleep=lambda _: None)  # fmt: skip
    assert (failed.value.code, failed.value.message) == ("NOT_FOUND", "bucket gone")
    assert lines == ["0%", "50%"]


# ------------------------------------------------------------------ plan


def test_plan_shows_each_clouds_link_grant_and_what_bills(tmp_path: Path) -> None:
    import yaml
    from typer.testing import CliRunner

    from provision.cli.app import app

    data = stack_spec("gcp-a3-64").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"]["object_store"] = {"uri": "gs://my-train-data/llm"}
    path = tmp_path / "gcs.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["plan", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.stdout
    out = " ".join(result.stdout.split())
    assert "gs://my-train-data/llm: $0.00/h for the link itself" in out
    assert "Cloud Storage bills the operations" in out
    assert "object store grant" in out and "bucket my-train-data only, to the filesystem's service agent" in out


def test_real_clients_read_lustres_discovery_document_from_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    from googleapiclient import discovery

    from provision.clouds.gcp.datalink import api_client

    built: list[tuple[str, str, dict[str, Any]]] = []
    monkeypatch.setattr(discovery, "build", lambda name, version, **kw: built.append((name, version, kw)))
    api_client("managed-lustre")
    api_client("parallelstore")
    # google-api-python-client bundles Parallelstore's document, not Managed Lustre's.
    assert [(n, v, kw["static_discovery"]) for n, v, kw in built] == [
        ("lustre", "v1", False),
        ("parallelstore", "v1", True),
    ]


def test_a_refused_start_waits_for_the_new_grant_then_gives_up() -> None:
    from provision.clouds.gcp.datalink import GRANT_PROPAGATION_S, POLL_SECONDS, MockTransfers, TransferError, transfer

    class Denied(Exception):
        resp = type("Resp", (), {"status": 403})()

    class Client(MockTransfers):
        refusals = 2

        def importData(self, name: str, body: dict[str, Any]) -> Any:  # noqa: N802
            if self.refusals:
                self.refusals -= 1
                raise Denied("the agent cannot read the bucket yet")
            return super().importData(name, body)

    slept: list[float] = []
    transfer(Client(), "managed-lustre", "projects/p/locations/z/instances/i", "importData", {}, sleep=slept.append)
    assert slept == [POLL_SECONDS] * 4  # two refusals, then two polls until the operation is done
    never = Client()
    never.refusals = 10**6
    slept.clear()
    with pytest.raises(TransferError) as e:
        transfer(never, "managed-lustre", "projects/p/locations/z/instances/i", "importData", {}, sleep=slept.append)
    assert e.value.code == "403" and sum(slept) == GRANT_PROPAGATION_S


def test_gcp_preflight_checks_the_bucket_before_anything_exists() -> None:
    from provision.clouds.base import get_adapter
    from provision.clouds.gcp.preflight import BUCKET_GRANT_PERMISSIONS, gcp_preflight, quota_metric

    plan = get_adapter("gcp").plan(linked("gcp-a3-64", {"uri": "gs://my-train-data/llm"}))

    class Project:
        held: set[str] | None = set(BUCKET_GRANT_PERMISSIONS)
        asked: list[tuple[str, list[str]]] = []

        def enabled_services(self) -> set[str]:
            return {"compute.googleapis.com", "iam.googleapis.com", "lustre.googleapis.com",
                    "servicenetworking.googleapis.com"}  # fmt: skip

        def machine_type(self, zone: str, name: str) -> dict[str, Any] | None:
            return {"name": name}

        def region_quotas(self, region: str) -> dict[str, tuple[float, float]]:
            return {str(quota_metric(plan)): (0.0, 10_000.0)}

        def bucket_permissions(self, bucket: str, permissions: list[str]) -> set[str] | None:
            self.asked.append((bucket, permissions))
            return self.held

    project = Project()
    assert gcp_preflight(plan, project) == []
    assert project.asked == [("my-train-data", BUCKET_GRANT_PERMISSIONS)]
    project.held = {"storage.buckets.getIamPolicy"}
    [cannot] = gcp_preflight(plan, project)
    assert cannot.path == "storage.shared.object_store.uri" and "storage.buckets.setIamPolicy" in cannot.rule
    project.held = None
    [missing] = gcp_preflight(plan, project)
    assert "does not exist" in missing.rule and "gcloud storage buckets create gs://my-train-data" in missing.fix
