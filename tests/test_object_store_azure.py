"""storage.shared.object_store on Azure (Managed Lustre HSM settings with Blob containers) and GCP's Filestore
(refused: it has no link)."""

from __future__ import annotations

from typing import Any

import pytest

from provision.spec import load_spec
from provision.spec.errors import SpecError
from tests.conftest import preview, stack_spec

ACCOUNT = (
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/data-rg/providers/Microsoft.Storage/"
    "storageAccounts/acct1"
)
LINK = {
    "uri": "https://acct1.blob.core.windows.net/data/llm",
    "import_path": "/llm",
    "account_id": ACCOUNT,
    "logging_container": "data-logs",
    "hpc_cache_principal_id": "11111111-2222-3333-4444-555555555555",
}


def amlfs_spec(link: dict[str, Any]) -> Any:
    data = stack_spec("azure-ndh100-64").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"]["object_store"] = link
    return load_spec(data)


def test_amlfs_gets_hsm_settings_of_the_blob_containers() -> None:
    result = preview(amlfs_spec(LINK), accounting=True)
    [fs] = [r for r in result.resources if r.type == "azure-native:storagecache:AmlFilesystem"]
    settings = fs.inputs["hsm"]["settings"]
    assert settings == {
        "container": f"{ACCOUNT}/blobServices/default/containers/data",
        "loggingContainer": f"{ACCOUNT}/blobServices/default/containers/data-logs",
        "importPrefix": "/llm",
    }
    unchecked = [leaf for leaf in result.accounting if leaf.status == "unchecked"]
    assert unchecked == []


def test_azure_link_problems_all_at_once() -> None:
    with pytest.raises(SpecError) as e:
        amlfs_spec({"uri": "https://acct1.blob.core.windows.net/data/llm", "import_path": "/", "export_path": "/out"})
    fields = {p.path for p in e.value.problems}
    prefix = "storage.shared.object_store."
    want = ("account_id", "logging_container", "import_path", "export_path", "hpc_cache_principal_id")
    assert fields == {prefix + k for k in want}
    assert "set import_path: /llm" in str(e.value)


def test_azure_link_refuses_another_account_and_the_data_container_as_log() -> None:
    other = ACCOUNT.replace("acct1", "acct2")
    with pytest.raises(SpecError) as e:
        amlfs_spec({**LINK, "account_id": other, "logging_container": "data"})
    assert {p.path for p in e.value.problems} == {
        "storage.shared.object_store.account_id",
        "storage.shared.object_store.logging_container",
    }


def test_strict_cloud_checks_the_hsm_settings() -> None:
    from provision.clouds.mocking import strict_check

    container = f"{ACCOUNT}/blobServices/default/containers/data"
    bad = strict_check(
        "azure-native:storagecache:AmlFilesystem",
        {"hsm": {"settings": {"container": container, "loggingContainer": container, "importPrefix": "llm"}}},
    )
    assert {v.field for v in bad} >= {"hsm.settings.loggingContainer", "hsm.settings.importPrefix"}
    assert any("same storage account" in v.rule for v in bad)
    ok = strict_check(
        "azure-native:storagecache:AmlFilesystem",
        {"hsm": {"settings": {"container": container, "loggingContainer": container + "-logs", "importPrefix": "/"}}},
    )
    # Outside a graph no role assignment precedes it: only that graph rule (test_object_store_grants.py) remains.
    assert [v.source.split(" ")[0] for v in ok if v.field.startswith("hsm.")] == [
        "https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites#access-roles-for-blob-integration"
    ]


def test_gcp_filestore_link_is_refused_with_the_reason() -> None:
    data = stack_spec("gcp-a3-ci").model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"].update(kind="filestore")
    data["storage"]["shared"]["object_store"] = {"uri": "gs://my-train-data"}
    with pytest.raises(SpecError) as e:
        load_spec(data)
    assert [p.path for p in e.value.problems] == ["storage.shared.kind"]
    assert "Filestore has no import or export" in str(e.value)
    assert "set storage.shared.kind: managed-lustre or parallelstore" in str(e.value)
