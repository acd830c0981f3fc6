"""``flow._C``: the functional API generated from api.yaml (its ``bind_python: True`` entries).

The typed stub ``_C.pyi`` beside this file is generated from the same yaml
(``python -m jflow.functional.stub``) and a test keeps the two in sync.
"""

from .functional import F as _F

globals().update({_name: getattr(_F, _name) for _name in _F.public})
__all__ = list(_F.public)
