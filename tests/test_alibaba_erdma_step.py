"""The erdma step installs the packages the installer builds with before it runs install.sh --batch.

install.sh builds the erdma kernel module (DKMS) and the rdma-core provider on the node; Alibaba's ACK eRDMA agent
installs debhelper, autotools-dev, dkms, libnl-3-dev, libnl-route-3-dev and cmake first on apt systems
(alibabacloud-erdma-controller internal/drivers/utils.go getInstallScript). Without them the critical step failed
and the node had no eRDMA device.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from nodekit import plan_of, run_step, sandbox, stubs

from provision.ops.nodes import mock_user_data

BUILD_PACKAGES = ("debhelper", "autotools-dev", "dkms", "libnl-3-dev", "libnl-route-3-dev", "cmake")
INSTALL_SH = 'printf "%s\\n" "install.sh $* ERDMA_CM_NO_BOUND_IF=${ERDMA_CM_NO_BOUND_IF:-}" >>"$STUB_LOG"\n'


def _tarball(path: Path) -> str:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        body = INSTALL_SH.encode()
        info = tarfile.TarInfo("erdma_installer/install.sh")
        info.size, info.mode = len(body), 0o755
        tar.addfile(info, io.BytesIO(body))
    path.write_bytes(data.getvalue())
    return hashlib.sha256(data.getvalue()).hexdigest()


def test_the_build_packages_come_before_install_sh(tmp_path: Path) -> None:
    root = sandbox(tmp_path, mock_user_data(plan_of("alibaba-gn8-ci")))
    sha = _tarball(tmp_path / "installer.tar.gz")
    env = root / "etc/provision/bootstrap.env"
    lines = [
        f"ERDMA_INSTALLER_SHA256={sha}" if ln.startswith("ERDMA_INSTALLER_SHA256=") else ln
        for ln in env.read_text().splitlines()
    ]
    env.write_text("\n".join(lines) + "\n")
    bin_dir = stubs(tmp_path)
    curl = '#!/bin/bash\nprintf "%s\\n" "curl $*" >>"$STUB_LOG"\n'
    curl += 'while [ $# -gt 0 ]; do [ "$1" = -o ] && cp "$SRC" "$2"; shift; done\n'
    (bin_dir / "curl").write_text(curl)
    (bin_dir / "tar").unlink(missing_ok=True)  # the real tar unpacks the fake installer
    result = run_step(tmp_path, root, "erdma", bin_dir=bin_dir, SRC=str(tmp_path / "installer.tar.gz"))
    assert result["rc"] == 0, result["err"] + result["log"]
    log = result["log"].splitlines()
    apt = next(i for i, line in enumerate(log) if line.startswith("apt-get") and " install " in line)
    assert set(BUILD_PACKAGES) <= set(log[apt].split())
    run = next(i for i, line in enumerate(log) if line.startswith("install.sh"))
    assert apt < run and log[run] == "install.sh --batch ERDMA_CM_NO_BOUND_IF=1"
