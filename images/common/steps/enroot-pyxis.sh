#!/bin/bash
# provision step enroot-pyxis (once, not critical; scheduler.kind: slurm with scheduler.slurm.containers): enroot
# from NVIDIA's release .deb (ENROOT_VERSION; kept only when it matches ENROOT_SHA256 when the image file gives one)
# and pyxis (PYXIS_VERSION) built from its release tarball against the distribution's libslurm-dev, so that
# `srun --container-image=...` runs a container with the node's GPUs. Pins and sources: images/compat.yaml slurm.
# enroot's hooks pass the fabric's devices and the NCCL env file into containers: /etc/enroot/mounts.d and
# environ.d below (enroot doc/configuration.md, "mounts.d", "environ.d").
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"

arch=$(dpkg --print-architecture)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base="https://github.com/NVIDIA/enroot/releases/download/v${ENROOT_VERSION:?}"
pv_fetch "$base/enroot_${ENROOT_VERSION}-1_${arch}.deb" "$work/enroot.deb" "${ENROOT_SHA256:-}" || exit 1
pv_fetch "$base/enroot+caps_${ENROOT_VERSION}-1_${arch}.deb" "$work/enroot-caps.deb" "${ENROOT_CAPS_SHA256:-}" || exit 1
pv_apt install --no-install-recommends "$work/enroot.deb" "$work/enroot-caps.deb" squashfs-tools || exit 1

pv_apt install --no-install-recommends build-essential libslurm-dev || exit 1
pv_fetch "https://github.com/NVIDIA/pyxis/archive/refs/tags/v${PYXIS_VERSION:?}.tar.gz" "$work/pyxis.tar.gz" "${PYXIS_SHA256:-}" || exit 1
tar -xzf "$work/pyxis.tar.gz" -C "$work" || exit 1
make -C "$work/pyxis-${PYXIS_VERSION}" install prefix=/usr/local || exit 1
printf 'required /usr/local/lib/slurm/spank_pyxis.so\n' > "$R/etc/slurm/plugstack.conf.d/pyxis.conf"

# The fabric inside containers: RDMA devices, and the NCCL env file the node steps render.
install -d -m 0755 "$R/etc/enroot/mounts.d" "$R/etc/enroot/environ.d"
if [ -d "$R/dev/infiniband" ]; then
  printf '/dev/infiniband /dev/infiniband none bind,nosuid,noexec,optional\n' > "$R/etc/enroot/mounts.d/90-provision-fabric.fstab"
fi
if [ -r "$R/etc/provision/nccl.env" ]; then
  cp "$R/etc/provision/nccl.env" "$R/etc/enroot/environ.d/90-provision-nccl.env"
fi
