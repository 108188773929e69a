"""GCP: A3 (TCPX, TCPXO, RDMA) and A2 clusters with compact placement and managed storage."""
