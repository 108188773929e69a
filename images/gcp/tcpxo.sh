# --- GCP: GPUDirect-TCPXO (a3-megagpu-8g). Needs NCCL_PLUGIN_IMAGE, RXDM_IMAGE, DMABUF_VERSION set above.
# Steps follow Cluster Toolkit's a3mega blueprint (install_dmabuf.yml, aperture_devices.yml) and Google's
# GPUDirect-TCPXO VM guide: dmabuf import helper, aperture devices, NCCL FasTrak plugin, RxDM daemon.
export DEBIAN_FRONTEND=noninteractive
if ! dkms status -m dmabuf-import-helper 2>/dev/null | grep -q installed; then
  echo "deb http://packages.cloud.google.com/apt apt-transport-artifact-registry-stable main" \
    > /etc/apt/sources.list.d/artifact-registry.list
  apt-get update -q && apt-get install -y -q apt-transport-artifact-registry dkms
  echo "deb [arch=all trusted=yes] ar+https://us-apt.pkg.dev/projects/gce-ai-infra gpudirect-tcpxo-apt main" \
    > /etc/apt/sources.list.d/gpudirect-tcpxo.list
  apt-get update -q && apt-get install -y -q "dmabuf-import-helper=${DMABUF_VERSION}*" || \
    apt-get install -y -q dmabuf-import-helper
fi
modprobe import-helper || echo "provision: WARNING: import-helper module not loaded" >&2
# Aperture devices of the TCPXO NICs, bind-mounted writable under /dev/aperture_devices.
cat > /etc/udev/rules.d/00-a3-megagpu.rules <<'RULES'
ACTION=="add", SUBSYSTEM=="pci", ATTR{vendor}=="0x1ae0", ATTR{device}=="0x0084", TAG+="systemd", \
    RUN+="/usr/bin/mkdir --mode=0755 -p /dev/aperture_devices", \
    RUN+="/usr/bin/systemd-mount --type=none --options=bind --collect %S/%p /dev/aperture_devices/%k", \
    RUN+="/usr/bin/bash -c '/usr/bin/chmod 0666 /dev/aperture_devices/%k/resource*'"
RULES
udevadm control --reload && udevadm trigger --subsystem-match=pci --action=add
# NCCL + the FasTrak net plugin + tuner into /var/lib/tcpxo/lib64 (pinned installer image).
docker run --rm --network=host --volume /var/lib:/var/lib "${NCCL_PLUGIN_IMAGE}" install --install-nccl
echo /var/lib/tcpxo/lib64 > /etc/ld.so.conf.d/provision-tcpxo.conf && ldconfig
# Receive Data Path Manager, restarted by systemd.
cat > /etc/systemd/system/provision-rxdm.service <<UNIT
[Unit]
Description=GPUDirect-TCPXO receive data path manager
After=docker.service
Requires=docker.service
[Service]
Restart=always
ExecStartPre=-/usr/bin/docker rm -f receive-datapath-manager
ExecStart=/usr/bin/docker run --rm --name receive-datapath-manager --cap-add=NET_ADMIN --network=host \
  --privileged --gpus all --volume /usr/lib/x86_64-linux-gnu:/usr/local/nvidia/lib64 \
  --volume /dev/dmabuf_import_helper:/dev/dmabuf_import_helper --env LD_LIBRARY_PATH=/usr/local/nvidia/lib64 \
  ${RXDM_IMAGE} --num_hops=2 --num_nics=8 --uid= --alsologtostderr
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload && systemctl enable --now provision-rxdm.service
if [ "$(ls /dev/aperture_devices 2>/dev/null | wc -l)" -lt 8 ]; then
  echo "provision: health check FAILED: fewer than 8 TCPXO aperture devices" >&2
  touch /var/run/provision-unhealthy
fi
