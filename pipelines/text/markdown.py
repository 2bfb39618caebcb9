"""Markdown patterns read by more than one stage (documents, answers, their scoring)."""

from __future__ import annotations

import re

# A list item's bullet or number at the start of a line ("- ", "* ", "+ ", "1. ", "2) "): in an answer the item
# is one sentence, to the end of its line.
LIST_ITEM = re.compile(r"^[ \t]*([-*+]|\d{1,3}[.)])[ \t]+", re.M)
