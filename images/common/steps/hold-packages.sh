#!/bin/bash
# provision step hold-packages (once): hold the NVIDIA, CUDA/NCCL, kernel and fabric packages the image (and the
# earlier steps) installed, so no upgrade can break the driver/library match (NVML "driver/library version
# mismatch") or boot a kernel without the Lustre / DKMS modules. Cluster Toolkit's blueprints hold the NVIDIA
# packages for the same reason.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
pv_wait_dpkg || exit 1
pattern='^(nvidia-|libnvidia-|cuda-|libcudnn|libnccl|nccl-|linux-image-|linux-headers-|linux-modules-|linux-(aws|gcp|azure|generic|oem)|lustre|efa|libfabric|ibverbs|rdma-core|mlnx|doca|rocm|amdgpu|rccl|erdma|dmabuf)'
pkgs=$(dpkg-query -W -f='${Package}\n' 2>/dev/null | grep -E "$pattern" || true)
[ -z "$pkgs" ] || printf '%s\n' "$pkgs" | xargs apt-mark hold >/dev/null
