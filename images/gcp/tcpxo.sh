# --- GCP: GPUDirect-TCPXO (a3-megagpu-8g). Needs NCCL_PLUGIN_IMAGE, RXDM_IMAGE, DMABUF_VERSION set above
# and google-apt.sh (the ar+https transport and Google's keys) run before.
# Steps follow Cluster Toolkit's a3mega blueprint (install_dmabuf.yml, aperture_devices.yml) and Google's
# GPUDirect-TCPXO VM guide: dmabuf import helper, aperture devices, NCCL FasTrak plugin, RxDM daemon.
# dmabuf import helper, built with DKMS for the running kernel. Linux 6.13 turned MODULE_IMPORT_NS's argument
# into a string literal and the packaged 1.1 source predates that, so its DKMS build fails on the 24.04
# image's kernel (Cluster Toolkit's a3mega blueprint patches the source the same way, "for kernel 6.17
# compatibility"). The package comes from Google's TCPXO repository (ar+https, see google-apt.sh).
if ! dkms status -m dmabuf-import-helper -v "${DMABUF_VERSION}" 2>/dev/null | grep -q installed; then
  apt-get install -y -q dkms "linux-headers-$(uname -r)"
  # Verified like every other Google source (google-apt.sh installs the Artifact Registry key): Artifact Registry
  # signs its Debian repositories with that key ("Debian packages" / "Configure VMs to install Debian packages").
  echo "deb [arch=all signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg] ar+https://us-apt.pkg.dev/projects/gce-ai-infra gpudirect-tcpxo-apt main" \
    > /etc/apt/sources.list.d/gpudirect-tcpxo.list
  apt-get update -q
  dmabuf_work=$(mktemp -d)
  (cd "${dmabuf_work}" && apt-get download dmabuf-import-helper && dpkg-deb -x ./dmabuf-import-helper_*.deb .)
  dmabuf_src="/usr/src/dmabuf-import-helper-${DMABUF_VERSION}"
  if [ ! -d "${dmabuf_work}${dmabuf_src}" ]; then
    echo "provision: dmabuf-import-helper ${DMABUF_VERSION} is not in the TCPXO repository" >&2
    exit 1
  fi
  rm -rf "${dmabuf_src}" && mv "${dmabuf_work}${dmabuf_src}" "${dmabuf_src}" && rm -rf "${dmabuf_work}"
  kernel=$(uname -r | cut -d- -f1)
  if [ "$(printf '6.13\n%s\n' "${kernel}" | sort -V | head -n1)" = "6.13" ]; then
    sed -i 's/MODULE_IMPORT_NS(DMA_BUF)/MODULE_IMPORT_NS("DMA_BUF")/' "${dmabuf_src}/import-helper.c"
  fi
  dkms remove -m dmabuf-import-helper -v "${DMABUF_VERSION}" --all >/dev/null 2>&1 || true
  dkms add -m dmabuf-import-helper -v "${DMABUF_VERSION}"
  dkms install -m dmabuf-import-helper -v "${DMABUF_VERSION}"
fi
echo import-helper > /etc/modules-load.d/provision-dmabuf.conf
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
# Receive Data Path Manager, restarted by systemd. From RxDM v1.0.20 (open source) the only flag is --num_hops;
# --uid, --alsologtostderr and --num_nics are retired (google/nccl-plugin-gpudirect-tcpxo README). Driver
# libraries come in through --gpus all, as in slurm-gcp's receive-data-path-manager-mega prolog; the host's
# /usr/lib/x86_64-linux-gnu must not be put on the container's LD_LIBRARY_PATH (its glibc would be loaded).
cat > /etc/systemd/system/provision-rxdm.service <<UNIT
[Unit]
Description=GPUDirect-TCPXO receive data path manager
After=docker.service
Requires=docker.service
[Service]
Restart=always
ExecStartPre=-/usr/bin/docker rm -f receive-datapath-manager
ExecStart=/usr/bin/docker run --rm --name receive-datapath-manager --cap-add=NET_ADMIN --network=host \
  --privileged --gpus all --env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu \
  --volume /dev/dmabuf_import_helper:/dev/dmabuf_import_helper \
  ${RXDM_IMAGE} --num_hops=2
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload && systemctl enable --now provision-rxdm.service
if [ "$(ls /dev/aperture_devices 2>/dev/null | wc -l)" -lt 8 ]; then
  echo "provision: health check FAILED: fewer than 8 TCPXO aperture devices" >&2
  touch /var/run/provision-unhealthy
fi
