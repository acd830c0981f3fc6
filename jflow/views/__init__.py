"""Views that alias their base: strided layouts (:mod:`.layout`) and the functionalization
that makes writes through a view reach its base (:mod:`.alias`)."""

from .alias import View, alias, base_of, detach, layout_of, unview, write
from .layout import Layout, is_contiguous, view_strides
from .methods import as_strided, diagonal

__all__ = ["View", "alias", "base_of", "detach", "layout_of", "unview", "write", "Layout",
           "is_contiguous", "view_strides", "as_strided", "diagonal"]
