# --- GCP: Parallelstore (DAOS) client for Ubuntu 22.04, as Cluster Toolkit's parallelstore module
# installs it (scripts/install-daos-client.sh). Needs DAOS_ACCESS_POINTS (a JSON list) set above.
if [ ! -x /bin/daos ]; then
  curl -fsSL -o /etc/apt/trusted.gpg.d/us-central1-apt.pkg.dev.asc https://us-central1-apt.pkg.dev/doc/repo-signing-key.gpg
  echo "deb https://us-central1-apt.pkg.dev/projects/parallelstore-packages v2-6-deb main" \
    > /etc/apt/sources.list.d/parallelstore.list
  apt-get update -q && apt-get install -y -q daos-client
  getent passwd daos_agent >/dev/null || useradd daos_agent
fi
mkdir -p /etc/daos /var/log/daos_agent && chown daos_agent:daos_agent /var/log/daos_agent
cat > /etc/daos/daos_agent.yml <<AGENT
access_points: ${DAOS_ACCESS_POINTS}
log_file: /var/log/daos_agent/daos_agent.log
transport_config:
  allow_insecure: true
AGENT
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
