"""The fixture corpus the tests write: a few pages about a fictional tool, 'harbor'."""

from __future__ import annotations

from pathlib import Path

PAGES: dict[str, str] = {
    "guide/install.md": """# Installing harbor { #install }

Harbor runs on Linux and macOS. Install it with `pip install harbor-cli`.

## Requirements

Harbor needs Python 3.11 or newer and about 200 MB of disk space.

/// tip | Offline installs
Copy the wheel files to the machine and run `pip install --no-index --find-links wheels harbor-cli`.
///
""",
    "guide/config.md": """---
title: Configuring harbor
---

# Configuration

Harbor reads its settings from `harbor.toml` in the working directory.

## Ports { #ports }

The dashboard listens on port 7420 by default. Set `HARBOR_PORT` to choose another port.

## Retention

Harbor keeps build logs for 14 days. The `retention_days` key in `harbor.toml` changes how long logs are kept.

| key | default | meaning |
|---|---|---|
| retention_days | 14 | days of build logs kept |
| max_workers | 4 | builds that run at the same time |
""",
    "reference/cli.md": """# Command line

The `harbor sync` command uploads local artefacts to the registry. It retries a failed upload three times.
To upload to a registry of your own, pass its address:

```bash
harbor sync --registry https://registry.example.com
```

The `harbor prune` command deletes artefacts older than the retention period.

Before it uploads anything, harbor sync checks three things:

- the registry answers at its address
- the token in `HARBOR_TOKEN` is still valid
- the disk has room for the downloaded artefacts
""",
    "notes/skip-me.md": "# Draft\n\nThis page is a draft and must not be indexed.\n",
}


def write_corpus(root: Path, pages: dict[str, str] | None = None) -> Path:
    for rel, text in (pages or PAGES).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
