#!/bin/bash
# provision step tcpx (once): GPUDirect-TCPX on a3-highgpu-8g: NCCL + the TCPX plugin (pinned installer image) and
# the RxDM daemon. RxDM runs with --gpu_nic_preset manual and the GPU/NIC topology of /etc/provision/tcpx (the
# a3vm preset hard-codes eth1..eth4, google/tcpgpudmarxd a3vm_gpu_rxq_configurator.cc; Ubuntu names the NICs
# enp6s0, enp12s0, enp134s0, enp140s0, as Cluster Toolkit's a3high blueprint and slurm-gcp's RxDM prolog use).
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
pv_retry 3 30 docker run --rm --volume /var/lib:/var/lib "$NCCL_PLUGIN_IMAGE" install --install-nccl || exit 1
echo /var/lib/tcpx/lib64 >"$R/etc/ld.so.conf.d/provision-tcpx.conf" && ldconfig
mkdir -p "$R/run/tcpx"
systemctl daemon-reload && systemctl enable --now provision-rxdm.service
