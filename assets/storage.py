"""Where asset values live between runs: pickles under a folder, one file per asset (and partition).

A build runs the graph as several Dagster runs (one per `chunks` partition, since a run materialises
one partition), so values must outlive a run. Unlike Dagster's stock filesystem IO manager, loading
every partition of `chunks` into the unpartitioned `embeddings` returns only the partitions that
exist: a build that asked for two strategies is not failed by the third one it never built.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dagster import ConfigurableIOManager, InputContext, OutputContext


class PickleFolderIOManager(ConfigurableIOManager):
    base_dir: str

    def _path(self, key: list[str], partition: str | None) -> Path:
        return Path(self.base_dir).joinpath(*key, f"{partition or '__all__'}.pkl")

    def _op_path(self, identifier: Sequence[str]) -> Path:
        """An op's output inside a graph-backed asset (no asset key): by run, step, output and mapping key."""
        return Path(self.base_dir).joinpath("_ops", *identifier).with_suffix(".pkl")

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if not context.has_asset_key:
            path = self._op_path(context.get_identifier())
        else:
            partition = context.asset_partition_key if context.has_asset_partitions else None
            path = self._path(list(context.asset_key.path), partition)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with tmp.open("wb") as handle:
            pickle.dump(obj, handle, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(path)  # readers never see half a file

    def load_input(self, context: InputContext) -> Any:
        if not context.has_asset_key:
            assert context.upstream_output is not None
            return self._read(self._op_path(context.upstream_output.get_identifier()))
        key = list(context.asset_key.path)
        if not context.has_asset_partitions:
            return self._read(self._path(key, None))
        keys = context.asset_partition_keys
        if context.has_partition_key and len(keys) == 1:  # a partitioned step reads its own partition
            return self._read(self._path(key, keys[0]))
        return {k: self._read(self._path(key, k)) for k in keys if self._path(key, k).exists()}

    @staticmethod
    def _read(path: Path) -> Any:
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: materialise the upstream asset first")
        with path.open("rb") as handle:
            return pickle.load(handle)
