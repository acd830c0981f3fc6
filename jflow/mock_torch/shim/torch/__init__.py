"""Found first on PYTHONPATH after ``eval $(python -m jflow.mock_torch)``: turns on
jflow.mock_torch and hands ``import torch`` the mocked module (Python returns whatever
``sys.modules["torch"]`` holds once this file has run)."""

import os
import sys

del sys.modules["torch"]  # this shim: the finder answers from now on
import jflow.mock_torch as _mock  # noqa: E402

_mock.enable(lazy=os.environ.get("JFLOW_MOCK_TORCH_LAZY") == "1",
             verbose=os.environ.get("JFLOW_MOCK_TORCH_VERBOSE") == "1")
import torch  # noqa: E402,F401  (the mocked module, now in sys.modules)
