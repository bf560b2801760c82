"""Graph layer: structure only (DAGs, d-separation, adjustment sets); knows nothing of mechanisms."""
