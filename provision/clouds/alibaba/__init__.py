"""Alibaba Cloud: GN8 / GN7 clusters with eRDMA, CPFS and NAS."""
