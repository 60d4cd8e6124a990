"""Scoring a run split into shards by query on a Dask cluster: the metric engine per worker."""
