# --- GCP: Parallelstore (DAOS) client for Ubuntu 22.04, as Cluster Toolkit's parallelstore module
# installs it (scripts/install-daos-client.sh). Needs DAOS_ACCESS_POINTS (a JSON list) set above.
if [ ! -x /bin/daos ]; then
  curl -fsSL -o /etc/apt/trusted.gpg.d/us-central1-apt.pkg.dev.asc https://us-central1-apt.pkg.dev/doc/repo-signing-key.gpg
  echo "deb https://us-central1-apt.pkg.dev/projects/parallelstore-packages v2-6-deb main" \
    > /etc/apt/sources.list.d/parallelstore.list
  pv_apt update && pv_apt install daos-client
  getent passwd daos_agent >/dev/null || useradd daos_agent
fi
mkdir -p /etc/daos /var/log/daos_agent && chown daos_agent:daos_agent /var/log/daos_agent
# Keep the agent off the GPU NICs: Parallelstore is peered with the host VPC only, so only the interface that carries
# the default route reaches it (Cluster Toolkit's mount script excluded "network cards dedicated to GPU" the same way).
host_nic=$(ip route show default 2>/dev/null | awk '{print $5; exit}')
exclude="lo"
for dev in /sys/class/net/*; do
  name=$(basename "$dev")
  case "$name" in lo | "$host_nic" | docker* | veth*) ;; *) exclude="$exclude, $name" ;; esac
done
{
  printf 'access_points: %s\n' "$DAOS_ACCESS_POINTS"
  printf 'log_file: /var/log/daos_agent/daos_agent.log\n'
  printf 'exclude_fabric_ifaces: [%s]\n' "$exclude"
  printf 'transport_config:\n  allow_insecure: true\n'
} > /etc/daos/daos_agent.yml
cat > /etc/systemd/system/daos_agent.service <<'UNIT'
[Unit]
Description=DAOS Agent
Wants=network-online.target
After=network-online.target
[Service]
Type=notify
User=daos_agent
Group=daos_agent
RuntimeDirectory=daos_agent
RuntimeDirectoryMode=0755
ExecStart=/usr/bin/daos_agent -o /etc/daos/daos_agent.yml
Restart=always
[Install]
WantedBy=multi-user.target
UNIT
sed -i 's/#.*user_allow_other/user_allow_other/' /etc/fuse.conf
systemctl daemon-reload && systemctl enable --now daos_agent.service
