# provision: mount the cluster's FSx for Lustre file system (rendered by provision/clouds/aws/userdata.py).
# The Deep Learning Base AMI ships the Lustre client; the file system is AVAILABLE before nodes launch.
fsx_source='${FSX_SOURCE}'
fsx_mount='${MOUNT}'
mkdir -p "$$fsx_mount"
if ! grep -qs " $$fsx_mount lustre " /etc/fstab; then
  echo "$$fsx_source $$fsx_mount lustre defaults,relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network.service 0 0" >> /etc/fstab
fi
mounted=false
for _ in $$(seq 1 10); do
  if mountpoint -q "$$fsx_mount" || mount -t lustre -o relatime,flock "$$fsx_source" "$$fsx_mount"; then
    mounted=true
    break
  fi
  sleep 15
done
if [ "$$mounted" != "true" ]; then
  echo "provision: could not mount $$fsx_source on $$fsx_mount" >&2
  touch /var/run/provision-unhealthy
fi
# The share's root belongs to the login user, not to everyone (no 1777).
chown '${OWNER}': "$$fsx_mount" && chmod 0755 "$$fsx_mount" || true
