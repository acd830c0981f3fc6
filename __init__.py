"""The repository's root (not the jflow package, which is the ``jflow/`` folder next to it).

A checkout cloned into a folder named ``jflow`` would shadow the package when a script runs
from the folder above it: Python finds the checkout first and imports it as an empty
namespace package, and the script fails later with ``module 'jflow' has no attribute
'tensor'``. This file makes the checkout a regular package that, imported as ``jflow``, loads
the real package (``jflow/jflow/__init__.py``) in its place, so ``import jflow`` gives the
checkout's jflow from there too (as it does from inside the checkout). Imported under any
other name (pytest imports the root of the tests as a package), it does nothing. The wheel
does not contain this file (tests/test_packaging.py checks both).
"""

if __name__ == "jflow":
    import importlib.util as _util
    import os as _os
    import sys as _sys

    _pkg = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "jflow")
    _spec = _util.spec_from_file_location("jflow", _os.path.join(_pkg, "__init__.py"),
                                          submodule_search_locations=[_pkg])
    if _spec is None or _spec.loader is None:
        raise ImportError(f"'import jflow' found the jflow source checkout "
                          f"{_os.path.dirname(_pkg)} but not the package inside it ({_pkg}); "
                          f"run the script from another folder or rename the checkout",
                          name="jflow", path=__file__)
    _mod = _util.module_from_spec(_spec)
    # the import statement returns what sys.modules holds once this file has run: the package
    _sys.modules["jflow"] = _mod
    _spec.loader.exec_module(_mod)
