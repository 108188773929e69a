# provision: the gIB NCCL plugin's environment for login shells (Cluster Toolkit a3ultra configure_nccl_env.yml).
if [ -f /usr/local/gib/scripts/set_nccl_env.sh ]; then . /usr/local/gib/scripts/set_nccl_env.sh; fi
if [ -d /usr/local/gib/lib64 ]; then export LD_LIBRARY_PATH="/usr/local/gib/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
