#!/bin/bash
# provision step gpu-driver (once): Alibaba's public images carry no GPU driver (the console's "install GPU driver
# automatically" is a console-side script): install the pinned branch and NVIDIA Fabric Manager (the 8-GPU HGX
# boards have NVSwitch). A driver that cannot load before a reboot asks the runner for one (exit $PV_REBOOT).
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  systemctl is-active --quiet nvidia-fabricmanager || systemctl restart nvidia-fabricmanager
  exit 0
fi
if ! command -v nvidia-smi >/dev/null; then
  pv_apt update || exit 1
  pv_apt install "linux-headers-$(uname -r)" "$DRIVER_PACKAGE" "$FABRICMANAGER" "libnvidia-nscq-$DRIVER_BRANCH" || exit 1
fi
systemctl enable nvidia-fabricmanager >/dev/null 2>&1 || true
if ! modprobe nvidia || ! systemctl restart nvidia-fabricmanager; then
  exit "$PV_REBOOT"
fi
