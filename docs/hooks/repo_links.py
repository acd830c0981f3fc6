"""MkDocs hook: links from a page to files of the repository outside ``docs/``.

The guides link source files and examples (``[user_relu/](../examples/custom_ops/user_relu/)``),
which work where the Markdown is read in the repository but are not pages of the site. This
hook keeps such a link's text and shows the repository path beside it as code; a link whose
target does not exist in the repository is a warning, so ``mkdocs build --strict`` fails on
it as it fails on a broken link between pages. Fenced code blocks are left alone.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.repo_links")

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")


def _rewrite(text: str, page_dir: Path, docs_dir: Path, repo: Path, src: str) -> str:
    def one(m: re.Match[str]) -> str:
        label, target = m[1], m[2]
        if "://" in target or target.startswith(("#", "mailto:")):
            return m[0]
        path = (page_dir / target.split("#", 1)[0]).resolve()
        if path == docs_dir or docs_dir in path.parents:
            return m[0]  # a page or file of the site: MkDocs checks it
        if repo not in path.parents and path != repo:
            log.warning("%s: link '%s' leaves the repository", src, target)
            return m[0]
        if not path.exists():
            log.warning("%s: link '%s' points to '%s', which does not exist in the "
                        "repository", src, target, path.relative_to(repo))
            return m[0]
        rel = path.relative_to(repo).as_posix() + ("/" if path.is_dir() else "")
        if label.strip("`").rstrip("/") == rel.rstrip("/"):
            return f"`{rel}`"
        return f"{label} (`{rel}`)"

    out, last = [], 0
    for fence in _FENCE.finditer(text):
        out.append(_LINK.sub(one, text[last:fence.start()]))
        out.append(fence[0])
        last = fence.end()
    out.append(_LINK.sub(one, text[last:]))
    return "".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    repo = Path(config["config_file_path"]).resolve().parent
    src = page.file.src_uri
    return _rewrite(markdown, (docs_dir / src).parent, docs_dir, repo, src)
