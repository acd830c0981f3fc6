"""``flow.hub`` (``torch.hub``): the cache directory and loading weights that are already
there. jflow never downloads: a URL whose file is not in the hub cache raises an error naming
the URL and the path to put the file at (the same file PyTorch would have downloaded);
checkpoints load with ``flow.load``."""

from __future__ import annotations

import os
import re
from typing import Any, NoReturn
from urllib.parse import urlparse

try:  # torch.hub.tqdm: the progress bar libraries take from here (the package when installed)
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    class tqdm:  # type: ignore[no-redef]  # noqa: N801
        """A silent stand-in for ``tqdm.tqdm`` (progress is not shown)."""

        def __init__(self, iterable: Any = None, *args: Any, **kwargs: Any) -> None:
            self.iterable = iterable

        def __iter__(self) -> Any:
            return iter(self.iterable or ())

        def update(self, n: int = 1) -> None:
            """No display."""

        def close(self) -> None:
            """No display."""

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

#: the hash prefix in a checkpoint's file name (``resnet18-f37072fd.pth``), as PyTorch's
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

__all__ = ["HASH_REGEX", "urlparse", "tqdm", "get_dir", "set_dir", "load_state_dict_from_url",
           "download_url_to_file", "load",
           "list", "help"]

_HUB_DIR: list[str | None] = [None]


def _get_torch_home() -> str:
    """``$TORCH_HOME``, else ``$XDG_CACHE_HOME/torch`` (``~/.cache/torch``), as PyTorch: the
    same cache PyTorch uses, so its downloaded weights are found."""
    xdg = os.getenv("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache"))
    return os.path.expanduser(os.getenv("TORCH_HOME", os.path.join(xdg, "torch")))


def get_dir() -> str:
    """The hub directory: :func:`set_dir`'s, else ``$TORCH_HUB``, else ``<torch home>/hub``."""
    if _HUB_DIR[0] is not None:
        return _HUB_DIR[0]
    return os.path.expanduser(os.getenv("TORCH_HUB", os.path.join(_get_torch_home(), "hub")))


def set_dir(d: str | os.PathLike) -> None:
    """Set the hub directory."""
    _HUB_DIR[0] = os.path.expanduser(os.fspath(d))


def _offline(url: str, path: str) -> NoReturn:
    raise RuntimeError(f"flow.hub: {url} is not in the hub cache and jflow does not download; "
                       f"fetch it yourself and put it at {path}")


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None, weights_only: bool = True
                             ) -> dict[str, Any]:
    """The state dict in ``<hub dir>/checkpoints/<file name of url>`` (read with
    ``flow.load``); raises naming the URL when the file is not there."""
    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    name = file_name or os.path.basename(urlparse(url).path)
    path = os.path.join(model_dir, name)
    if not os.path.exists(path):
        _offline(url, path)
    from .serialization import load as _load  # noqa: PLC0415
    return _load(path, map_location=map_location, weights_only=weights_only)


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> NoReturn:
    """Raises: jflow does not download (the error names the URL and ``dst``)."""
    _offline(url, dst)


def _no_repo(fn: str, repo: str) -> NoReturn:
    raise RuntimeError(f"flow.hub.{fn}({repo!r}): jflow does not fetch or run hub "
                       f"repositories (hubconf.py code); build the model from its library and "
                       f"load its weights with flow.hub.load_state_dict_from_url")


def load(repo_or_dir: str, model: str, *args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see :func:`_no_repo`)."""
    _no_repo("load", repo_or_dir)


def list(github: str, force_reload: bool = False, **kwargs: Any) -> NoReturn:  # noqa: A001
    """Raises (see :func:`load`)."""
    _no_repo("list", github)


def help(github: str, model: str, force_reload: bool = False, **kwargs: Any  # noqa: A001
         ) -> NoReturn:
    """Raises (see :func:`load`)."""
    _no_repo("help", github)


