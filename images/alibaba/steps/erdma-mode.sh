#!/bin/bash
# provision step erdma-mode (every boot, eRDMA types): erdma in RoCE-compatible mode (its RoCEv2 GIDs are what the
# NCCL settings select) and GPUDirect's peer-memory module, as Alibaba's eRDMA controller loads the GPU (OFED) driver
# (AliyunContainerService/alibabacloud-erdma-controller, internal/drivers/ofed.go).
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
echo "options erdma compat_mode=Y" >"$R/etc/modprobe.d/provision-erdma.conf"
if [ "$(cat "$R/sys/module/erdma/parameters/compat_mode" 2>/dev/null || true)" = "N" ]; then
  rmmod erdma || exit "$PV_REBOOT"
fi
modprobe erdma compat_mode=Y || exit "$PV_REBOOT"
if modprobe nvidia_peermem 2>/dev/null; then echo nvidia_peermem >"$R/etc/modules-load.d/provision-peermem.conf"; fi
