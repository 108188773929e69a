"""Azure: ND H100 v5 and siblings on InfiniBand inside single-placement-group scale sets."""
