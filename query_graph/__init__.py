"""The query path as a Hamilton function DAG: one module per stage, the driver builder and the timing adapter."""
