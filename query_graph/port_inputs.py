"""Let clients typed by their port (a runtime-checkable Protocol) pass Hamilton's input check.

Hamilton treats a Protocol as a generic type and rejects any instance of it; this adapter checks
such inputs with `isinstance` (structural, the Protocol's methods) and leaves the rest to Hamilton.
"""

from __future__ import annotations

from typing import Any

from hamilton import htypes
from hamilton.lifecycle.base import BaseDoValidateInput


class PortAwareInputCheck(BaseDoValidateInput):
    def do_validate_input(self, *, node_type: type, input_value: Any) -> bool:
        if getattr(node_type, "_is_protocol", False) and getattr(node_type, "_is_runtime_protocol", False):
            return isinstance(input_value, node_type)
        return htypes.check_input_type(node_type, input_value)
