"""Let clients typed by their port (a runtime-checkable Protocol) pass Hamilton's input check.

Hamilton treats a Protocol as a generic type and rejects any instance of it; `accepts` checks such
inputs with `isinstance` (structural, the Protocol's methods) and leaves the rest to Hamilton's own
`htypes.check_input_type`. The driver uses it through `PortAwareInputCheck` (a public lifecycle hook),
the front of the graph (query_graph/front.py, which calls its nodes itself) directly.
"""

from __future__ import annotations

from typing import Any

from hamilton import htypes
from hamilton.lifecycle import EdgeConnectionHook


def accepts(node_type: Any, input_value: Any) -> bool:
    """Whether `input_value` may be given for an input of type `node_type` (None always may, as in Hamilton)."""
    if input_value is None:
        return True
    if getattr(node_type, "_is_protocol", False) and getattr(node_type, "_is_runtime_protocol", False):
        return isinstance(input_value, node_type)
    return htypes.check_input_type(node_type, input_value)


class PortAwareInputCheck(EdgeConnectionHook):
    def check_edge_types_match(self, type_from: type, type_to: type, **kwargs: Any) -> bool:
        return False  # an or-gate after Hamilton's own edge check: that check alone decides

    def validate_input(self, node_type: type, input_value: Any, **kwargs: Any) -> bool:
        return accepts(node_type, input_value)
