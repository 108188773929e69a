# provision: AWS EFA / NVSwitch checks for p4d, p4de, p5, p5e and p5en nodes on the Deep Learning Base
# OSS Nvidia Driver GPU AMI (which ships the EFA driver, libfabric, aws-ofi-nccl and fabric manager).
# Rendered into the node bootstrap by provision/clouds/aws/userdata.py with string.Template
# (a doubled dollar sign is a literal one). Failures mark the node unhealthy; they never stop boot.
efa_expected=${EFA_EXPECTED}
if [ "$$efa_expected" -gt 0 ]; then
  # Every EFA device (also the efa-only interfaces, which have no IP) is one RDMA device.
  efa_found=$$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
  if [ "$$efa_found" -ne "$$efa_expected" ]; then
    echo "provision: EFA check FAILED: $$efa_found of $$efa_expected EFA devices present" >&2
    touch /var/run/provision-unhealthy
  fi
  fi_info_bin=/opt/amazon/efa/bin/fi_info
  if [ -x "$$fi_info_bin" ] && ! "$$fi_info_bin" -p efa -t FI_EP_RDM >/dev/null 2>&1; then
    echo "provision: EFA check FAILED: libfabric finds no efa provider" >&2
    touch /var/run/provision-unhealthy
  fi
fi
# NVSwitch systems need the fabric manager before CUDA sees the GPUs as one NVLink domain.
if systemctl list-unit-files nvidia-fabricmanager.service >/dev/null 2>&1; then
  systemctl is-active --quiet nvidia-fabricmanager || systemctl restart nvidia-fabricmanager || true
fi
