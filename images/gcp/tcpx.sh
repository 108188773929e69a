# --- GCP: GPUDirect-TCPX (a3-highgpu-8g). Needs NCCL_PLUGIN_IMAGE and RXDM_IMAGE set above.
# Steps follow Google's GPUDirect-TCPX guide and Cluster Toolkit's a3high blueprint: NCCL + TCPX plugin
# (installer container), the RxDM daemon with the a3vm GPU-NIC preset, and an open INPUT chain.
docker run --rm --volume /var/lib:/var/lib "${NCCL_PLUGIN_IMAGE}" install --install-nccl
echo /var/lib/tcpx/lib64 > /etc/ld.so.conf.d/provision-tcpx.conf && ldconfig
mkdir -p /run/tcpx
iptables -I INPUT -p tcp -m tcp -j ACCEPT
# The driver libraries reach the container through --gpus all (the NVIDIA container toolkit mounts them into
# its /usr/lib/x86_64-linux-gnu), as in slurm-gcp's receive-data-path-manager prolog. Never mount the host's
# /usr/lib/x86_64-linux-gnu onto LD_LIBRARY_PATH: the container's loader would pick up the host's glibc.
cat > /etc/systemd/system/provision-rxdm.service <<UNIT
[Unit]
Description=GPUDirect-TCPX receive data path manager
After=docker.service
Requires=docker.service
[Service]
Restart=always
ExecStartPre=-/usr/bin/docker rm -f receive-datapath-manager
ExecStart=/usr/bin/docker run --rm --name receive-datapath-manager --privileged --cap-add=NET_ADMIN \
  --network=host --gpus all --ulimit memlock=-1 --env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu \
  --volume /run/tcpx:/run/tcpx \
  --entrypoint /tcpgpudmarxd/build/app/tcpgpudmarxd ${RXDM_IMAGE} \
  --gpu_nic_preset a3vm --gpu_shmem_type fd --uds_path /run/tcpx --setup_param "--verbose 128 2 0"
[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
if uname -r | grep -q tcpx; then
  systemctl enable --now provision-rxdm.service
else
  # No TCPX kernel (the stock image): GPUDirect-TCPX cannot work. Use NCCL's socket transport rather
  # than failing every job, and say so.
  echo "provision: WARNING: kernel $(uname -r) is not a TCPX kernel; NCCL falls back to sockets" >&2
  printf 'export NCCL_NET=Socket\nexport NCCL_SOCKET_IFNAME=enp0s12,enp6s0,enp12s0,enp134s0,enp140s0\n' \
    > /etc/profile.d/zz-provision-tcpx-fallback.sh
  touch /var/run/provision-fabric-degraded
fi
