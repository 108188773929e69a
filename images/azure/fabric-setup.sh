# provision: Azure InfiniBand / NCCL setup for ND-series nodes on the microsoft-dsvm ubuntu-hpc images.
# Rendered into the node bootstrap by provision/clouds/azure/userdata.py with string.Template (a doubled dollar sign is a literal one).
# The image's sku-customizations.service links the topology file, writes /etc/nccl.conf and starts
# nvidia-fabricmanager for the VM size it reads from IMDS; this waits for it and checks the result.
ib_expected=${IB_EXPECTED}
topo_file='${TOPO_FILE}'
gpu_vendor='${GPU_VENDOR}'
# systemd answers `show` for a unit that does not exist too (LoadState=not-found, ActiveState=inactive),
# so an image without the service is recognised by LoadState, not by the exit status.
for _ in $$(seq 1 60); do
  [ "$$(systemctl show -p LoadState --value sku-customizations 2>/dev/null)" = "loaded" ] || break
  state=$$(systemctl show -p ActiveState --value sku-customizations 2>/dev/null)
  [ "$$state" = "active" ] || [ "$$state" = "failed" ] && break
  sleep 5
done
if [ "$$gpu_vendor" = "nvidia" ] && systemctl list-unit-files nvidia-fabricmanager.service >/dev/null 2>&1; then
  systemctl is-active --quiet nvidia-fabricmanager || systemctl restart nvidia-fabricmanager || true
  modprobe nvidia-peermem 2>/dev/null || true
fi
if [ -n "$$topo_file" ] && [ ! -e "$$topo_file" ]; then
  echo "provision: NCCL topology file $$topo_file is missing from the image" >&2
  touch /var/run/provision-unhealthy
fi
ib_ports=0
for port in /sys/class/infiniband/*/ports/1; do
  [ -e "$$port/link_layer" ] || continue
  if [ "$$(cat "$$port/link_layer")" = "InfiniBand" ] && grep -q ACTIVE "$$port/state"; then
    ib_ports=$$((ib_ports + 1))
  fi
done
if [ "$$ib_ports" -lt "$$ib_expected" ]; then
  echo "provision: $$ib_ports of $$ib_expected InfiniBand ports are ACTIVE" >&2
  touch /var/run/provision-unhealthy
fi
