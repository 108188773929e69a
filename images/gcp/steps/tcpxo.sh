#!/bin/bash
# provision step tcpxo (once): GPUDirect-TCPXO on a3-megagpu-8g, as Cluster Toolkit's a3mega blueprint
# (install_dmabuf.yml, aperture_devices.yml) and Google's GPUDirect-TCPXO VM guide: the dmabuf import helper (DKMS),
# the aperture devices of the TCPXO NICs, NCCL + the FasTrak plugin (pinned installer image), the RxDM daemon.
# Linux 6.13 turned MODULE_IMPORT_NS's argument into a string literal and the packaged 1.1 source predates that,
# so its DKMS build fails on the 24.04 image's kernel: patch it the way Cluster Toolkit's blueprint does.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
if ! dkms status -m dmabuf-import-helper -v "$DMABUF_VERSION" 2>/dev/null | grep -q installed; then
  pv_apt install dkms "linux-headers-$(uname -r)" || exit 1
  echo "deb [arch=all signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg] ar+https://us-apt.pkg.dev/projects/gce-ai-infra gpudirect-tcpxo-apt main" \
    >"$R/etc/apt/sources.list.d/gpudirect-tcpxo.list"
  pv_apt update || exit 1
  work=$(mktemp -d)
  (cd "$work" && pv_retry 3 15 apt-get download dmabuf-import-helper && dpkg-deb -x ./dmabuf-import-helper_*.deb .) || exit 1
  src="/usr/src/dmabuf-import-helper-$DMABUF_VERSION"
  if [ ! -d "$work$src" ]; then
    pv_log "dmabuf-import-helper $DMABUF_VERSION is not in the TCPXO repository"
    exit 1
  fi
  rm -rf "$R$src" && mv "$work$src" "$R$src" && rm -rf "$work"
  kernel=$(uname -r | cut -d- -f1)
  if [ "$(printf '6.13\n%s\n' "$kernel" | sort -V | head -n1)" = "6.13" ]; then
    sed -i 's/MODULE_IMPORT_NS(DMA_BUF)/MODULE_IMPORT_NS("DMA_BUF")/' "$R$src/import-helper.c"
  fi
  dkms remove -m dmabuf-import-helper -v "$DMABUF_VERSION" --all >/dev/null 2>&1 || true
  dkms add -m dmabuf-import-helper -v "$DMABUF_VERSION" || exit 1
  dkms install -m dmabuf-import-helper -v "$DMABUF_VERSION" || exit 1
fi
echo import-helper >"$R/etc/modules-load.d/provision-dmabuf.conf"
modprobe import-helper || exit 1
udevadm control --reload && udevadm trigger --subsystem-match=pci --action=add
pv_retry 3 30 docker run --rm --network=host --volume /var/lib:/var/lib "$NCCL_PLUGIN_IMAGE" install --install-nccl || exit 1
echo /var/lib/tcpxo/lib64 >"$R/etc/ld.so.conf.d/provision-tcpxo.conf" && ldconfig
systemctl daemon-reload && systemctl enable --now provision-rxdm.service
