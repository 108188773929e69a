"""AWS: p5 / p5e / p5en / p4d / p4de clusters with EFA, cluster placement and FSx for Lustre."""
