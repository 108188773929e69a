"""The file system domain lookup a node runs at boot (images/alibaba/provision-fs-domain), against local fakes.

A fake ECS metadata service (hardened mode: every read needs the token from PUT /latest/api/token) and a fake NAS
API that checks the RPC signature with the role's secret (its own implementation of the documented algorithm, not
the script's) run on localhost; the real script runs against them. The signing itself is held to Alibaba's
published worked example. Then the rendered fs-domain and shared-mount steps run in a node sandbox.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.machinery
import importlib.util
import json
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from nodekit import files_of, plan_of, run_bootstrap, run_step, sandbox

from provision.clouds.alibaba.ramrole import DOMAIN_FILE, export_description, fs_description, role_name
from provision.clouds.alibaba.userdata import MAX_USER_DATA_BYTES, mock_user_data, user_data

SCRIPT = ROOT / "images/alibaba/provision-fs-domain"
ROLE = "ali-cpfs-cn-hangzhou-nodes"
FS, EXPORT = "cpfs-0123456789abcdef", "exp-0123456789abcdef"
DOMAIN = "cpfs-0123456789abcdef-fedcba.cn-hangzhou.cpfs.aliyuncs.com"
NAS_DOMAIN = "0a1b2c3d4e-abc12.cn-hangzhou.nas.aliyuncs.com"
DESCRIPTION, EXPORT_DESCRIPTION = "provision-ali-cpfs-shared", "provision-ali-cpfs-root"
CREDS = {
    "AccessKeyId": "STS.NTestKeyId0001",
    "AccessKeySecret": "Fake/Secret+Value=0001",
    "SecurityToken": "CAIS+fake/sts/token==0001",
    "Expiration": "2026-12-01T23:00:00Z",
    "LastUpdated": "2026-12-01T17:00:00Z",
    "Code": "Success",
}


def _load_script() -> Any:
    loader = importlib.machinery.SourceFileLoader("provision_cpfs_domain", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


# ---------------------------------------------------------------- the signature, against the vendor's example


def test_signature_matches_alibabas_published_example() -> None:
    """ECS API reference "Request signatures" worked example (doc-detail/28139; the RPC signature V2 pages use the
    same one): DescribeRegions with AccessKeyId testid and secret testsecret signs to OLeaidS1JvxuMvnyHOwuJ+uX5qY=."""
    m = _load_script()
    params = {
        "AccessKeyId": "testid",
        "Action": "DescribeRegions",
        "Format": "XML",
        "SignatureMethod": "HMAC-SHA1",
        "SignatureNonce": "3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf",
        "SignatureVersion": "1.0",
        "Timestamp": "2016-02-23T12:46:24Z",
        "Version": "2014-05-26",
    }
    assert m.string_to_sign("GET", params) == (
        "GET&%2F&AccessKeyId%3Dtestid%26Action%3DDescribeRegions%26Format%3DXML%26SignatureMethod%3DHMAC-SHA1"
        "%26SignatureNonce%3D3ee8c1b8-83d3-44af-a94f-4e0ad82fd6cf%26SignatureVersion%3D1.0"
        "%26Timestamp%3D2016-02-23T12%253A46%253A24Z%26Version%3D2014-05-26"
    )
    assert m.sign("GET", params, "testsecret") == "OLeaidS1JvxuMvnyHOwuJ+uX5qY="
    # The encoding rule: only A-Z a-z 0-9 - _ . ~ literal; space %20, * %2A (not + and *).
    assert m.percent_encode("a b*~/+=") == "a%20b%2A~%2F%2B%3D"


# ---------------------------------------------------------------- fake metadata service + fake NAS API


def _encode(text: str) -> str:
    """The documented encoding, written independently of the script: UTF-8 bytes, A-Za-z0-9-_.~ kept."""
    keep = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~"
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in text.encode())


def _expected_signature(params: dict[str, str], secret: str) -> str:
    canonical = "&".join(f"{_encode(k)}={_encode(v)}" for k, v in sorted(params.items()))
    to_sign = f"GET&{_encode('/')}&{_encode(canonical)}"
    return base64.b64encode(hmac.new(f"{secret}&".encode(), to_sign.encode(), hashlib.sha1).digest()).decode()


@dataclass
class Fake:
    """What the fakes answer: ``api`` is ok / error / empty / no-domain / bad-domain; ``creds_after``: that many
    credential reads answer 404 first; ``fs_after``: that many DescribeFileSystems calls list no file system (still
    creating); ``others``: unrelated file systems listed first (``page`` of them per page)."""

    api: str = "ok"
    creds_after: int = 0
    fs_after: int = 0
    others: int = 0
    page: int = 100
    description: str = DESCRIPTION
    export_description: str = EXPORT_DESCRIPTION
    role: str = ROLE
    token: str = "md-token-0001"
    vpc: str = "vpc-nodes0001"
    seen: list[str] = field(default_factory=list)
    nas_params: list[dict[str, str]] = field(default_factory=list)


def _handler(fake: Fake) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep pytest output clean
            pass

        def _send(self, code: int, body: str) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self) -> None:  # noqa: N802
            fake.seen.append(f"PUT {self.path}")
            if self.path != "/latest/api/token" or not self.headers.get("X-aliyun-ecs-metadata-token-ttl-seconds"):
                return self._send(400, "")
            return self._send(200, fake.token)

        def do_GET(self) -> None:  # noqa: N802
            fake.seen.append(f"GET {self.path.split('?')[0]}")
            if self.path.startswith("/latest/"):
                return self._metadata()
            return self._nas()

        def _metadata(self) -> None:
            # Hardened mode: no (or a wrong) token, no answer (ECS "Instance metadata": security hardening mode).
            if self.headers.get("X-aliyun-ecs-metadata-token") != fake.token:
                return self._send(401, "")
            if self.path == "/latest/meta-data/vpc-id":
                return self._send(200, fake.vpc)
            prefix = "/latest/meta-data/ram/security-credentials/"
            reads = sum(1 for s in fake.seen if s.startswith(f"GET {prefix}"))
            if not self.path.startswith(prefix) or self.path[len(prefix) :] != fake.role or reads <= fake.creds_after:
                return self._send(404, "")
            return self._send(200, json.dumps(CREDS))

        def _nas(self) -> None:
            params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query, keep_blank_values=True))
            fake.nas_params.append(params)
            signature = params.pop("Signature", "")
            if signature != _expected_signature(params, CREDS["AccessKeySecret"]):
                return self._send(400, json.dumps({"Code": "IncompleteSignature", "Message": "signature mismatch"}))
            if params.get("SecurityToken") != CREDS["SecurityToken"]:
                return self._send(403, json.dumps({"Code": "InvalidSecurityToken.Mismatch", "Message": "token"}))
            if fake.api == "error":
                # Like SignatureDoesNotMatch, the message echoes the request (with the credentials in it).
                echoed = f"server string to sign is: SecurityToken%3D{_encode(CREDS['SecurityToken'])}"
                return self._send(400, json.dumps({"Code": "Forbidden.RAM", "Message": echoed}))
            if params.get("Action") == "DescribeFileSystems":
                return self._send(200, json.dumps(self._file_systems(params)))
            targets: list[dict[str, Any]] = []
            domains = {"ok": DOMAIN, "no-domain": "", "bad-domain": "x;reboot #.example.com"}
            if fake.api in domains and params.get("FileSystemId") == FS:
                domain = domains[fake.api]
                targets = [
                    {"ExportId": "exp-other", "Description": "someone-else", "ProtocolMountTargetDomain": "a.b.c"},
                    {"ExportId": EXPORT, "Description": fake.export_description, "ProtocolMountTargetDomain": domain},
                ]
            return self._send(200, json.dumps({"RequestId": "R-1", "ProtocolMountTargets": targets}))

        def _file_systems(self, params: dict[str, str]) -> dict[str, Any]:
            calls = sum(1 for p in fake.nas_params if p.get("Action") == "DescribeFileSystems")
            listed = [{"FileSystemId": f"cpfs-other{i}", "Description": f"other-{i}"} for i in range(fake.others)]
            if calls > fake.fs_after:
                if params.get("FileSystemType") == "cpfs":
                    listed.append({"FileSystemId": FS, "Description": fake.description})
                else:
                    mount = {"MountTargetDomain": NAS_DOMAIN, "Status": "Active", "VpcId": "vpc-nodes0001"}
                    creating = {"MountTargetDomain": "x.example.com", "Status": "Pending", "VpcId": "vpc-nodes0001"}
                    # An attached volume: another cluster's mount target, in its own VPC, listed first.
                    other = {"MountTargetDomain": "y.example.com", "Status": "Active", "VpcId": "vpc-other0001"}
                    targets = {"MountTarget": [other, creating, mount]}
                    listed.append(
                        {"FileSystemId": "0a1b2c3d4e", "Description": fake.description, "MountTargets": targets}
                    )
            number, size = int(params["PageNumber"]), min(int(params["PageSize"]), fake.page)
            page = listed[(number - 1) * size : number * size]
            return {"TotalCount": len(listed), "PageNumber": number, "FileSystems": {"FileSystem": page}}

    return Handler


@pytest.fixture
def fake() -> Iterator[tuple[Fake, str]]:
    state = Fake()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    # shutdown() waits for serve_forever's next look at the stop flag: every poll_interval (0.5 s by default)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _lookup(
    base: str, out: Path, *extra: str, role: str = ROLE, kind: str = "cpfs"
) -> subprocess.CompletedProcess[str]:
    args = ["--kind", kind, "--description", DESCRIPTION, "--export-description", EXPORT_DESCRIPTION]
    args += ["--role", role, "--endpoint", base, "--out", str(out)]
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--attempts", "3", "--delay", "0", *extra],
        env={"PROVISION_CPFS_METADATA": f"{base}/latest", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _no_secret(text: str) -> None:
    for secret in (CREDS["AccessKeySecret"], CREDS["SecurityToken"], _encode(CREDS["SecurityToken"])):
        assert secret not in text
    assert _encode(_encode(CREDS["SecurityToken"])) not in text


def test_lookup_writes_the_exports_domain_with_a_signed_token_mode_request(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    out = tmp_path / "domain"
    p = _lookup(base, out)
    assert p.returncode == 0, p.stderr
    assert out.read_text() == DOMAIN + "\n"
    assert state.seen[0] == "PUT /latest/api/token"  # the token first, as hardened mode requires
    listing, exports = state.nas_params
    assert listing["Action"] == "DescribeFileSystems" and listing["FileSystemType"] == "cpfs"
    assert exports["Action"] == "DescribeProtocolMountTarget" and exports["Version"] == "2017-06-26"
    assert exports["FileSystemId"] == FS  # found by its description, not known to the user data
    assert exports["SignatureMethod"] == "HMAC-SHA1" and exports["SignatureVersion"] == "1.0"
    _no_secret(p.stdout + p.stderr)


def test_a_nas_lookup_takes_the_active_mount_target_of_the_described_file_system(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    out = tmp_path / "domain"
    p = _lookup(base, out, kind="standard")
    assert p.returncode == 0, p.stderr
    assert out.read_text() == NAS_DOMAIN + "\n"  # the one in the node's VPC, not another cluster's
    assert "GET /latest/meta-data/vpc-id" in state.seen
    (listing,) = state.nas_params  # one call: DescribeFileSystems carries the mount targets
    assert listing["FileSystemType"] == "standard"


def test_a_file_system_still_being_created_is_waited_for(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    state.fs_after = 2  # the nodes boot before the file system exists: the first two listings lack it
    p = _lookup(base, tmp_path / "domain")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("no cpfs file system described provision-ali-cpfs-shared yet") == 2


def test_the_lookup_pages_through_other_file_systems(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    state.others, state.page = 250, 100
    p = _lookup(base, tmp_path / "domain", "--attempts", "1")
    assert p.returncode == 0, p.stderr
    pages = [q["PageNumber"] for q in state.nas_params if q["Action"] == "DescribeFileSystems"]
    assert pages == ["1", "2", "3"]


def test_retries_back_off_to_a_cap(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    state.description = "not-ours"
    p = _lookup(base, tmp_path / "domain", "--delay", "0.01", "--max-delay", "0.02")
    assert p.returncode == 1
    assert "retrying in 0.01 s" in p.stderr and "retrying in 0.02 s" in p.stderr


def test_credentials_that_appear_late_are_waited_for(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    state.creds_after = 2  # the first two reads: 404, as before the role reaches the metadata service
    p = _lookup(base, tmp_path / "domain")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("retrying") == 2 and "no credentials for RAM role" in p.stderr


def test_no_role_credentials_fail_with_the_reason(fake: Any, tmp_path: Path) -> None:
    _, base = fake
    p = _lookup(base, tmp_path / "domain", role="other-role")
    assert p.returncode == 1
    assert "failed after 3 attempts" in p.stderr and "no credentials for RAM role other-role" in p.stderr
    assert not (tmp_path / "domain").exists()


def test_an_api_error_is_named_without_the_credentials_it_echoes(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    state.api = "error"
    p = _lookup(base, tmp_path / "domain")
    assert p.returncode == 1
    assert "DescribeFileSystems: HTTP 400 Forbidden.RAM" in p.stderr
    assert "***" in p.stderr  # the echoed token was there and is redacted
    _no_secret(p.stdout + p.stderr)


@pytest.mark.parametrize(
    ("api", "said"),
    [("empty", "not listed yet"), ("no-domain", "has no domain yet"), ("bad-domain", "is not a DNS name")],
)
def test_an_export_without_a_domain_yet_fails_clearly(fake: Any, tmp_path: Path, api: str, said: str) -> None:
    state, base = fake
    state.api = api
    p = _lookup(base, tmp_path / "domain")
    assert p.returncode == 1 and said in p.stderr and len(state.nas_params) == 6  # bounded: 3 attempts of 2 calls


def test_metadata_without_the_token_answers_nothing(fake: Any) -> None:
    """The fake behaves like hardened mode, so the success above proves the script sends the token."""
    _, base = fake
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{base}/latest/meta-data/ram/security-credentials/{ROLE}", timeout=5)
    assert err.value.code == 401


# ---------------------------------------------------------------- the rendered steps on a node


def test_cpfs_stack_looks_the_domain_up_before_the_shared_mount_and_fits_the_ecs_limit() -> None:
    plan = plan_of("alibaba-gn8-64")
    files = files_of(mock_user_data(plan))
    order = [s["name"] for s in json.loads(files["/etc/provision/steps.json"])["steps"]]
    assert order.index("fs-domain") < order.index("shared-mount")
    steps = {s["name"]: s for s in json.loads(files["/etc/provision/steps.json"])["steps"]}
    assert steps["fs-domain"]["critical"] and not steps["fs-domain"]["every_boot"]
    assert steps["fs-domain"]["timeout"] >= 90 * 60  # CPFS 20-40 min, protocol service 5-10 min
    assert steps["shared-mount"]["every_boot"]
    env = files["/etc/provision/bootstrap.env"]
    assert f"SHARED_SOURCE_FILE={DOMAIN_FILE}" in env and "SHARED_SOURCE_PATH=/share" in env
    assert "SHARED_SOURCE=" not in env and "NAS_ENDPOINT=https://nas-vpc.cn-hangzhou.aliyuncs.com" in env
    assert files["/usr/local/lib/provision/provision-fs-domain"] == SCRIPT.read_text()
    assert "FS_KIND=cpfs" in env and f"FS_DESCRIPTION={fs_description('alibaba-gn8-64')}" in env
    assert f"FS_EXPORT_DESCRIPTION={export_description('alibaba-gn8-64')}" in env
    assert "cpfs-" not in env  # no cloud id: the user data is ready before the file system exists
    health = json.loads(files["/etc/provision/health.json"])
    assert health["shared_fs"] == {"mount": "/shared", "fstype": "nfs"}
    assert len(user_data(plan)) <= MAX_USER_DATA_BYTES


def test_nas_stack_looks_its_mount_target_up_at_boot_too() -> None:
    files = files_of(mock_user_data(plan_of("alibaba-gn8-ci")))  # general-purpose NAS
    env = files["/etc/provision/bootstrap.env"]
    assert "SHARED_SOURCE=" not in env and f"SHARED_SOURCE_FILE={DOMAIN_FILE}" in env
    assert "FS_KIND=standard" in env and "FS_EXPORT_DESCRIPTION" not in env
    assert "/usr/local/lib/provision/provision-fs-domain" in files


def _node(tmp_path: Path, base: str) -> Path:
    root = sandbox(tmp_path, mock_user_data(plan_of("alibaba-gn8-64")))
    env = root / "etc/provision/bootstrap.env"
    swap = {"NAS_ENDPOINT": f"'{base}'", "FS_LOOKUP_ATTEMPTS": "2"}  # a bounded wait for a test
    lines = [
        f"{ln.split('=')[0]}={swap[ln.split('=')[0]]}" if ln.split("=")[0] in swap else ln
        for ln in env.read_text().splitlines()
    ]
    env.write_text("\n".join(lines) + "\n")  # the test's fake NAS instead of nas-vpc.<region>.aliyuncs.com
    return root


def test_the_rendered_steps_look_up_then_mount_the_domain(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    state.role = role_name("alibaba-gn8-64", "cn-hangzhou")
    state.description = fs_description("alibaba-gn8-64")
    state.export_description = export_description("alibaba-gn8-64")
    state.nas_params.clear()
    root = _node(tmp_path, base)
    env = {"PROVISION_CPFS_METADATA": f"{base}/latest"}
    looked = run_step(tmp_path, root, "fs-domain", **env)
    assert looked["rc"] == 0, looked["err"]
    assert (root / DOMAIN_FILE.lstrip("/")).read_text() == DOMAIN + "\n"
    assert state.nas_params[-1]["FileSystemId"] == FS
    mounted = run_step(tmp_path, root, "shared-mount", bin_dir=tmp_path / "stubs")
    assert mounted["rc"] == 0, mounted["err"]
    assert "-o vers=3,nolock,proto=tcp,rsize=1048576" in mounted["log"]
    assert f"{DOMAIN}:/share {root}/shared" in mounted["log"]
    assert f"{DOMAIN}:/share /shared nfs vers=3," in (root / "etc/fstab").read_text()


@pytest.mark.parametrize("content", [None, "", "evil;rm -rf /\n", "$(reboot)\n", "-o.example.com\n"])
def test_the_shared_mount_refuses_a_missing_or_unsafe_domain_file(tmp_path: Path, content: str | None) -> None:
    root = sandbox(tmp_path, mock_user_data(plan_of("alibaba-gn8-64")))
    if content is not None:
        path = root / DOMAIN_FILE.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    result = run_step(tmp_path, root, "shared-mount")
    assert result["rc"] == 1 and "does not hold a DNS name" in result["err"]
    assert "mount " not in result["log"] and not (root / "etc/fstab").exists()


def test_the_runner_records_the_lookup_and_the_mount_in_bootstrap_json(fake: Any, tmp_path: Path) -> None:
    state, base = fake
    state.role = role_name("alibaba-gn8-64", "cn-hangzhou")
    state.description = fs_description("alibaba-gn8-64")
    state.export_description = export_description("alibaba-gn8-64")
    root = _node(tmp_path, base)
    result = run_bootstrap(tmp_path, "", root=root, PROVISION_CPFS_METADATA=f"{base}/latest")
    steps, order = result["state"]["steps"], result["state"]["order"]
    assert order.index("fs-domain") < order.index("shared-mount")
    assert steps["fs-domain"]["status"] == "ok" and steps["shared-mount"]["status"] == "ok", steps
    assert any(DOMAIN in line for line in steps["fs-domain"]["tail"])
    assert f"{DOMAIN}:/share" in result["log"]
    _no_secret(json.dumps(result["state"]) + (root / "var/log/provision-bootstrap.log").read_text())
