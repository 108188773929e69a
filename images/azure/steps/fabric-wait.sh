#!/bin/bash
# provision step fabric-wait (every boot): ND-series on the microsoft-dsvm ubuntu-hpc images. The image's
# sku-customizations.service links the NCCL topology file, writes /etc/nccl.conf and starts nvidia-fabricmanager
# for the VM size it reads from IMDS, at every boot: wait for it (the nccl-conf step must come after it), then
# make sure Fabric Manager and GPUDirect RDMA's peer-memory module are up and the topology file exists.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
# systemd answers `show` for a unit that does not exist too (LoadState=not-found): recognise it by LoadState.
for _ in $(seq 1 60); do
  [ "$(systemctl show -p LoadState --value sku-customizations 2>/dev/null)" = "loaded" ] || break
  state=$(systemctl show -p ActiveState --value sku-customizations 2>/dev/null)
  if [ "$state" = "active" ] || [ "$state" = "failed" ]; then break; fi
  sleep 5
done
if [ "${GPU_VENDOR:-nvidia}" = "nvidia" ] && systemctl list-unit-files nvidia-fabricmanager.service >/dev/null 2>&1; then
  systemctl is-active --quiet nvidia-fabricmanager || systemctl restart nvidia-fabricmanager || exit 1
  modprobe nvidia-peermem 2>/dev/null || true
fi
# InfiniBand ports go ACTIVE only once the subnet manager has configured them, which can take a while after
# boot: wait (up to 2 minutes) so the health check that follows does not flag a node that is merely early.
for _ in $(seq 1 24); do
  active=0
  for port in "$R"/sys/class/infiniband/*/ports/1; do
    [ -e "$port/link_layer" ] || continue
    if [ "$(cat "$port/link_layer")" = "InfiniBand" ] && grep -q ACTIVE "$port/state"; then
      active=$((active + 1))
    fi
  done
  [ "$active" -ge "${IB_PORTS:-0}" ] && break
  sleep 5
done
if [ -n "${TOPO_FILE:-}" ] && [ ! -e "$R$TOPO_FILE" ]; then
  pv_log "the NCCL topology file $TOPO_FILE is missing from the image"
  exit 1
fi
