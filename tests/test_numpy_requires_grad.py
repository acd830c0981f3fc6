"""Reading a tensor that requires grad into NumPy, by PyTorch's rules (checked against torch).

PyTorch refuses ``t.numpy()`` / ``np.asarray(t)`` / ``np.array(t)`` / a NumPy ufunc on ``t``
while grad mode is on and ``t`` requires grad ("Can't call numpy() on Tensor that requires
grad. Use tensor.detach().numpy() instead."): the array would silently leave the graph.
``numpy(force=True)``, ``detach()``, ``.data``, ``no_grad`` / ``inference_mode``, ``tolist()``,
``item()`` and ``float()`` read it. ``__dlpack__`` (``np.from_dlpack(t)``) refuses a tensor
that requires grad in any grad mode, with a ``BufferError``. Each case runs on jflow and on
real PyTorch and must end the same way: the same exception type and message, or equal
values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

MSG = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    try:
        v = fn()
    except Exception as e:  # noqa: BLE001  (the outcome itself is compared)
        return type(e).__name__, str(e)
    return "ok", np.asarray(v).tolist()


# (name, function of (library, tensor that requires grad)); the library is jflow or torch
CASES: list[tuple[str, Callable[[Any, Any], Any]]] = [
    ("numpy", lambda lib, t: t.numpy()),
    ("numpy_force", lambda lib, t: t.numpy(force=True)),
    ("asarray", lambda lib, t: np.asarray(t)),
    ("array", lambda lib, t: np.array(t)),
    ("asarray_dtype", lambda lib, t: np.asarray(t, dtype=np.float64)),
    ("ufunc", lambda lib, t: np.add(t, 1)),
    ("result_of_op", lambda lib, t: (t * 2).numpy()),
    ("view", lambda lib, t: t[1:].numpy()),
    ("detach", lambda lib, t: t.detach().numpy()),
    ("data", lambda lib, t: t.data.numpy()),
    ("tolist", lambda lib, t: t.tolist()),
    ("item", lambda lib, t: t[0].item()),
    ("float", lambda lib, t: float(t[0].detach())),
    ("no_grad_numpy", lambda lib, t: _in(lib.no_grad(), lambda: t.numpy())),
    ("no_grad_asarray", lambda lib, t: _in(lib.no_grad(), lambda: np.asarray(t))),
    ("no_grad_then_enable", lambda lib, t: _in(lib.no_grad(),
                                               lambda: _in(lib.enable_grad(), t.numpy))),
    ("set_grad_enabled_false", lambda lib, t: _in(lib.set_grad_enabled(False), t.numpy)),
    ("inference_mode", lambda lib, t: _in(lib.inference_mode(), lambda: np.asarray(t))),
    ("dlpack", lambda lib, t: np.from_dlpack(t)),
    ("dlpack_no_grad", lambda lib, t: _in(lib.no_grad(), lambda: np.from_dlpack(t))),
    ("dlpack_detached", lambda lib, t: np.from_dlpack(t.detach())),
    ("parameter", lambda lib, t: lib.nn.Parameter(t.detach() + 1).numpy()),
    ("parameter_asarray", lambda lib, t: np.asarray(lib.nn.Linear(2, 3).weight)),
    ("parameter_no_grad", lambda lib, t: _in(lib.no_grad(),
                                             lambda: lib.nn.Parameter(t.detach()).numpy())),
    ("no_requires_grad", lambda lib, t: (t.detach() + 1).numpy()),
    ("tensor_of_elements", lambda lib, t: lib.tensor([t[0], t[2]])),  # read, as data
]


def _in(ctx: Any, fn: Callable[[], Any]) -> Any:
    with ctx:
        return fn()


@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # torch's
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch(name: str, fn: Callable[[Any, Any], Any]) -> None:
    data = np.array([1.5, -2.0, 3.25], np.float32)
    got = _outcome(lambda: fn(flow, flow.tensor(data, requires_grad=True)))
    want = _outcome(lambda: fn(torch, torch.tensor(data, requires_grad=True)))
    if name == "parameter_asarray":  # random weights: compare the outcome's kind only
        got, want = got[0], want[0]
    assert got == want


def test_message_is_pytorchs() -> None:
    t = flow.ones(3, requires_grad=True)
    for read in (t.numpy, lambda: np.asarray(t), lambda: (t + 1).numpy()):
        with pytest.raises(RuntimeError) as e:
            read()
        assert str(e.value) == MSG


def test_force_must_be_a_bool_and_is_keyword_only() -> None:
    t = flow.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="force must be a bool"):
        t.numpy(force=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        t.numpy(True)  # type: ignore[misc]  (keyword-only in PyTorch too)
    with pytest.raises(TypeError):
        torch.ones(2).numpy(True)


def test_grad_mode_is_per_thread() -> None:
    """``no_grad`` in another thread does not open this thread's reads (as PyTorch)."""
    import threading
    t = flow.ones(2, requires_grad=True)
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with flow.no_grad():
            entered.set()
            release.wait(30)

    th = threading.Thread(target=other)
    th.start()
    try:
        assert entered.wait(30)
        with pytest.raises(RuntimeError, match="requires grad"):
            t.numpy()
    finally:
        release.set()
        th.join()


def test_lazy_mode_refuses_and_reads_detached() -> None:
    w = flow.nn.Parameter(flow.tensor([1.0, 2.0]))
    with flow.lazy():
        y = w * 3
        with pytest.raises(RuntimeError, match="requires grad"):
            y.numpy()
        np.testing.assert_array_equal(y.detach().numpy(), [3.0, 6.0])


def test_jflow_reads_parameters_itself() -> None:
    """jflow's own readers of a parameter (printing, state_dict, saving, copying, pickling,
    an optimizer step, clip_grad_norm_) work on tensors that require grad in grad mode."""
    import copy
    import io
    import pickle

    m = flow.nn.Linear(3, 2)
    w = m.weight.detach().numpy().copy()
    assert "tensor([[" in repr(m.weight) and "requires_grad=True" in repr(m.weight)
    sd = m.state_dict()
    np.testing.assert_array_equal(sd["weight"].numpy(), w)  # state_dict values are detached
    buf = io.BytesIO()
    flow.save(m.state_dict(), buf)
    buf.seek(0)
    np.testing.assert_array_equal(flow.load(buf)["weight"].numpy(), w)
    np.testing.assert_array_equal(copy.deepcopy(m).weight.detach().numpy(), w)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(m.weight)).detach().numpy(), w)
    m(flow.ones(4, 3)).sum().backward()
    flow.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
    flow.optim.SGD(m.parameters(), lr=0.1).step()
    assert not np.array_equal(m.weight.detach().numpy(), w)
