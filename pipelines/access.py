"""Who may read what: access groups on pages, and the caller's groups that retrieval filters by.

A page belongs to one or more access groups. `public` is the group every caller is in; a page of no declared
group gets the source's default (`RAGLINE_ACCESS_DEFAULT`, `public` unless set). A source declares groups per
folder or glob (`RAGLINE_ACCESS_RULES`: the first matching glob wins) and a Markdown page per page in its front
matter (`access: [staff]`, which wins over the rules). Each chunk carries its page's groups in its payload.

A caller's `Access` is the set of groups it is in (`public` always among them), or every group (the operator's
command line, the bootstrap admin token). A chunk reaches a caller only when the two sets meet; the vector
store applies that as a filter inside every query (pipelines/adapters/qdrant_edge.py, qdrant_server.py), and
every cache and per-index memo that holds chunk text or words is kept apart per `Access.key`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import yaml  # type: ignore[import-untyped]

PUBLIC = "public"
EVERY_GROUP = "*"  # a token's groups may be this alone: it reads every page
_GROUP = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)", re.S)


class AccessError(ValueError):
    """A group name, rule or front-matter `access` value that is not in the documented shape."""


def group_name(value: object) -> str:
    """A valid group name (lower-case letters, digits, `_.-`, at most 64), else an AccessError."""
    name = str(value).strip().lower()
    if not _GROUP.fullmatch(name):
        raise AccessError(f"invalid access group {value!r}: use lower-case letters, digits, '_', '.', '-' (<= 64)")
    return name


def groups_of(values: Iterable[object]) -> tuple[str, ...]:
    """Valid, distinct, sorted group names."""
    return tuple(sorted({group_name(v) for v in values}))


@dataclass(frozen=True)
class Access:
    """The groups a caller reads; `groups` None: every group."""

    groups: frozenset[str] | None

    @classmethod
    def of(cls, groups: Iterable[str]) -> Access:
        """A caller in `groups` (and `public`); `*` among them: every group."""
        names = [str(g) for g in groups]
        if EVERY_GROUP in names:
            return EVERYTHING
        return cls(frozenset({PUBLIC, *groups_of(names)}))

    @property
    def unrestricted(self) -> bool:
        return self.groups is None

    @property
    def key(self) -> str:
        """The caller's group set as one string: caches and memos are kept apart by it."""
        return EVERY_GROUP if self.groups is None else ",".join(sorted(self.groups))

    def allows(self, chunk_groups: Sequence[str] | None) -> bool:
        """May this caller read a chunk of these groups? A chunk indexed before groups existed is public."""
        if self.groups is None:
            return True
        return bool(self.groups.intersection(chunk_groups or (PUBLIC,)))

    def as_list(self) -> list[str]:
        return [EVERY_GROUP] if self.groups is None else sorted(self.groups)


EVERYTHING = Access(None)
PUBLIC_ONLY = Access(frozenset({PUBLIC}))


@dataclass(frozen=True)
class AccessRules:
    """A source's groups: the default and (glob, groups) rules over document ids, first match wins."""

    default: tuple[str, ...] = (PUBLIC,)
    rules: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def of(cls, default: Sequence[str], rules: Mapping[str, Sequence[str]]) -> AccessRules:
        if not default:
            raise AccessError("the default access groups are empty: a page nobody may read is never useful")
        parsed = []
        for pattern, groups in rules.items():
            if not groups:
                raise AccessError(f"access rule {pattern!r} names no group")
            parsed.append((str(pattern), groups_of(groups)))
        return cls(groups_of(default), tuple(parsed))

    def as_dict(self) -> dict[str, object]:
        return {"default": list(self.default), "rules": {p: list(g) for p, g in self.rules}}

    def for_page(self, document_id: str, raw_text: str) -> tuple[str, ...]:
        """The groups of one page: what the page declares (`declared_access`), else the first rule matching its id
        (a glob over the path relative to the source root, `**` for any depth), else the default."""
        declared = declared_access(raw_text, document_id)
        if declared is not None:
            return declared
        for pattern, groups in self.rules:
            if _matches(document_id, pattern):
                return groups
        return self.default


def _matches(document_id: str, pattern: str) -> bool:
    path = document_id.lstrip("/")
    return fnmatch.fnmatchcase(path, pattern) or (pattern.endswith("/**") and path.startswith(pattern[:-2]))


_HTML_META = re.compile(r"<meta\s[^>]*>", re.I)
_META_NAME = re.compile(r"""\bname\s*=\s*["']?access["'\s>]""", re.I)
_META_CONTENT = re.compile(r"""\bcontent\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_RST_FIELD = re.compile(r"\A(?:\s*\.\. [^\n]*\n|\s*:[\w-]+:[^\n]*\n)*?\s*:access:[ \t]*([^\n]+)")


def declared_access(raw_text: str, document_id: str = "") -> tuple[str, ...] | None:
    """The groups a page declares, by its kind: a Markdown page's front matter (`access: [staff]`), an HTML
    page's `<meta name="access" content="staff, legal">`, a reStructuredText page's field at its top
    (`:access: staff, legal`, as Sphinx reads file-wide metadata); None when it declares none."""
    kind = document_id.lower().rsplit(".", 1)[-1]
    if kind in ("html", "htm"):
        for tag in _HTML_META.findall(raw_text[:20_000]):
            content = _META_CONTENT.search(tag)
            if _META_NAME.search(tag) and content is not None:
                return _listed(next(g for g in content.groups() if g is not None), document_id)
        return None
    if kind in ("rst", "rest"):
        field = _RST_FIELD.match(raw_text)
        return None if field is None else _listed(field.group(1), document_id)
    return front_matter_access(raw_text, document_id)


def _listed(text: str, document_id: str) -> tuple[str, ...]:
    names = [n for n in re.split(r"[,\s]+", text.strip()) if n]
    if not names:
        raise AccessError(f"{document_id}: its access declaration names no group")
    try:
        return groups_of(names)
    except AccessError as exc:
        raise AccessError(f"{document_id}: {exc}") from None


def front_matter_access(raw_text: str, document_id: str = "") -> tuple[str, ...] | None:
    """The `access` list of a page's YAML front matter (a string or a list of strings), None without one."""
    front = _FRONT_MATTER.match(raw_text)
    if front is None or "access" not in front.group(1):
        return None
    try:
        data = yaml.safe_load(front.group(1))
    except yaml.YAMLError:
        return None  # not YAML: the cleaner treats it as text too
    if not isinstance(data, dict) or "access" not in data:
        return None
    value = data["access"]
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values:
        raise AccessError(f"{document_id}: front matter 'access' must be a group or a non-empty list of groups")
    try:
        return groups_of(values)
    except AccessError as exc:
        raise AccessError(f"{document_id}: {exc}") from None
