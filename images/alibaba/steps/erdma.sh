#!/bin/bash
# provision step erdma (once, eRDMA types): the eRDMA driver and user-space from Alibaba's VPC-internal mirror,
# installed from the installer tarball whose SHA-256 Alibaba publishes ("Enable eRDMA", erdma-usage), checked
# before anything in it runs. The tarball's own install.sh is used, never a separately fetched setup script.
# The installer builds the erdma kernel module (DKMS) and the rdma-core provider on the node, so their build
# packages come first: the ones Alibaba's own ACK eRDMA agent installs before the same batch install on apt
# systems (AliyunContainerService/alibabacloud-erdma-controller internal/drivers/utils.go getInstallScript:
# debhelper autotools-dev dkms libnl-3-dev libnl-route-3-dev cmake, then ERDMA_CM_NO_BOUND_IF=1). The running
# kernel's headers come from the gpu-driver step.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
command -v eadm >/dev/null && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pv_fetch "$ERDMA_INSTALLER_URL" "$work/erdma_installer.tar.gz" "$ERDMA_INSTALLER_SHA256" || exit 1
tar -xzf "$work/erdma_installer.tar.gz" -C "$work" || exit 1
installer=$(find "$work" -name install.sh -type f | head -n 1)
[ -n "$installer" ] || { pv_log "the eRDMA installer has no install.sh"; exit 1; }
pv_apt install debhelper autotools-dev dkms libnl-3-dev libnl-route-3-dev cmake || exit 1
(cd "$(dirname "$installer")" && ERDMA_CM_NO_BOUND_IF=1 bash ./install.sh --batch) || exit 1
