"""The composition root: the `ragline` console script, which may import every layer."""
