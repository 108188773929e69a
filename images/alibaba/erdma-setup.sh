# provision: Alibaba GPU + eRDMA node setup (inserted into images/common/bootstrap.sh as CLOUD_SETUP).
# Rendered by provision/clouds/alibaba/userdata.py. Holds no secrets: the public keys below are public.
export DEBIAN_FRONTEND=noninteractive
provision_reboot=false

# --- login user: every spec key in the user's own home (root's is /root), the only login when no key is RSA or
#     ECDSA (ECS key pairs take no ed25519 keys, so the nodes then have no key pair)
if ! id -u ${PROVISION_SSH_USER} >/dev/null 2>&1; then
  useradd -m -s /bin/bash ${PROVISION_SSH_USER}
fi
echo "${PROVISION_SSH_USER} ALL=(ALL) NOPASSWD:ALL" > /etc/sudoers.d/90-provision
chmod 0440 /etc/sudoers.d/90-provision
provision_home=$(getent passwd ${PROVISION_SSH_USER} | cut -d: -f6)
provision_group=$(id -gn ${PROVISION_SSH_USER})
install -d -m 0700 -o ${PROVISION_SSH_USER} -g "$provision_group" "$provision_home/.ssh"
cat > "$provision_home/.ssh/authorized_keys" <<'KEYS'
${PROVISION_AUTHORIZED_KEYS}
KEYS
chown "${PROVISION_SSH_USER}:$provision_group" "$provision_home/.ssh/authorized_keys"
chmod 0600 "$provision_home/.ssh/authorized_keys"

# --- GPU driver (pinned branch) and NVIDIA Fabric Manager (8-GPU HGX boards have NVSwitch)
if ! command -v nvidia-smi >/dev/null 2>&1; then
  apt-get update -y
  apt-get install -y "linux-headers-$(uname -r)" ${PROVISION_DRIVER_PACKAGE} ${PROVISION_FABRICMANAGER} \
    "libnvidia-nscq-${PROVISION_DRIVER_BRANCH}"
  modprobe nvidia || provision_reboot=true
  systemctl enable nvidia-fabricmanager
  systemctl start nvidia-fabricmanager || provision_reboot=true
fi

# --- eRDMA stack from Alibaba's VPC-internal mirror: the installer is pinned, its SHA-256 checked, and only what
#     the checksum covers runs (the tarball's own install.sh, as Alibaba's eRDMA controller installs the driver,
#     internal/drivers/default.go); no separately fetched, unverified setup script runs as root.
if [ "${PROVISION_ERDMA}" = "true" ] && ! command -v eadm >/dev/null 2>&1; then
  cd /tmp
  curl -fsSLo erdma_installer.tar.gz "${PROVISION_ERDMA_INSTALLER_URL}"
  echo "${PROVISION_ERDMA_INSTALLER_SHA256}  erdma_installer.tar.gz" | sha256sum -c -
  apt-get install -y dkms cmake build-essential "linux-headers-$(uname -r)"
  rm -rf erdma_installer && tar -xzf erdma_installer.tar.gz
  (cd erdma_installer && ERDMA_CM_NO_BOUND_IF=1 ./install.sh --batch)
fi

# --- erdma in RoCE-compatible mode (its RoCEv2 GIDs are what nccl_env selects), now and at every boot, and
#     GPUDirect's peer-memory module where the driver has it; as Alibaba's eRDMA controller loads the GPU (OFED)
#     driver (AliyunContainerService/alibabacloud-erdma-controller, internal/drivers/ofed.go)
if [ "${PROVISION_ERDMA}" = "true" ]; then
  echo "options erdma compat_mode=Y" > /etc/modprobe.d/provision-erdma.conf
  if [ "$(cat /sys/module/erdma/parameters/compat_mode 2>/dev/null || true)" = "N" ]; then
    rmmod erdma || provision_reboot=true
  fi
  modprobe erdma compat_mode=Y || provision_reboot=true
  if modprobe nvidia_peermem 2>/dev/null; then echo nvidia_peermem > /etc/modules-load.d/provision-peermem.conf; fi
fi

# --- network, at every boot (user data runs once; the reboot below or any later one drops `ip` settings): the
#     planned MTU on every ENI (Alibaba requires it for NCCL over eRDMA) and each secondary ENI (the second ERI)
#     addressed from the instance metadata with its routes at metric 200+, below eth0's, so eth0 keeps the default
#     and subnet routes (as the eRDMA controller does, internal/drivers/netdev.go). PROVISION_NET_* are for tests.
cat > /usr/local/sbin/provision-net <<'NET'
#!/bin/bash
set -u
net=${PROVISION_NET_SYSFS:-/sys/class/net}
md=${PROVISION_NET_METADATA:-http://100.100.100.200/latest/meta-data/network/interfaces/macs}
# The metadata service runs in security-hardened mode (tokens required, ecs.Instance http_tokens): ask for a
# short-lived token first (ECS "Instance metadata": PUT /latest/api/token).
token_url=${PROVISION_NET_TOKEN_URL:-http://100.100.100.200/latest/api/token}
token=$(curl -fsS -X PUT "$token_url" -H "X-aliyun-ecs-metadata-token-ttl-seconds: 300") || token=""
metric=200
for dev in "$net"/eth*; do
  [ -e "$dev" ] || continue
  ifname=$(basename "$dev")
  ip link set dev "$ifname" mtu ${PROVISION_MTU} || true
  [ "$ifname" = "eth0" ] && continue
  ip link set dev "$ifname" up || true
  if ! ip -4 addr show dev "$ifname" | grep -q inet; then
    mac=$(cat "$dev/address")
    auth="X-aliyun-ecs-metadata-token: $token"
    addr=$(curl -fsS -H "$auth" "$md/$mac/primary-ip-address") && cidr=$(curl -fsS -H "$auth" "$md/$mac/vswitch-cidr-block") \
      || continue
    ip addr add "$addr/${cidr#*/}" dev "$ifname" noprefixroute || true
    ip route replace "$cidr" dev "$ifname" metric "$metric" || true
  fi
  metric=$((metric + 1))
done
NET
chmod 0755 /usr/local/sbin/provision-net
cat > /etc/systemd/system/provision-net.service <<'UNIT'
[Unit]
Description=provision: ENI MTU and secondary ENI (ERI) addresses
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/provision-net

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable provision-net.service
/usr/local/sbin/provision-net

if [ "$provision_reboot" = "true" ]; then
  echo "provision: kernel modules need a reboot; rebooting in 1 minute"
  shutdown -r +1 "provision: reboot to load the GPU / eRDMA drivers"
fi
