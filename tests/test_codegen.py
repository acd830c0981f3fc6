"""Generated code (jflow/_codegen.py): every generator's text is registered with linecache
(tracebacks, ``inspect.getsource`` and pdb show it), counted and bounded; and plain mode
(``flow.config.set_codegen(False)`` / ``JFLOW_CODEGEN=0``) runs each generator's plain twin
with the results of the generated code, bit for bit (eager autograd, lazy mode with its
backward templates, compiled calls)."""

from __future__ import annotations

import inspect
import io
import linecache
import os
import pdb
import subprocess
import sys
import traceback

import numpy as np
import pytest

import jflow as flow
from jflow import _codegen
from jflow.autograd import graph
from jflow.lazy_mode import backward as lazy_backward
from jflow.lazy_mode import record as lazy_record

F = flow.nn.functional
RS = np.random.RandomState(0)


@pytest.fixture
def plain_mode():
    """Run the test body in plain mode, restoring the mode after."""
    old = flow.config.set_codegen(False)
    try:
        yield
    finally:
        flow.config.set_codegen(old)


@pytest.fixture
def generated_mode():
    """Run the test body with generated code (also under ``JFLOW_CODEGEN=0``)."""
    old = flow.config.set_codegen(True)
    try:
        yield
    finally:
        flow.config.set_codegen(old)


def _in_mode(flag: bool, fn):
    old = flow.config.set_codegen(flag)
    try:
        return fn()
    finally:
        flow.config.set_codegen(old)


def _both_modes(fn):
    """``fn()`` with generated code, then with the plain twins; both results as NumPy."""
    return [_in_mode(flag, fn) for flag in (True, False)]


def _np(out):
    if isinstance(out, (list, tuple)):
        return [_np(o) for o in out]
    if out is None:
        return None
    return out.detach().numpy() if isinstance(out, flow.Tensor) else np.asarray(out)


def _assert_same(a, b):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
    elif a is None:
        assert b is None
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # the same executables: bit for bit


# -- source registered: tracebacks, inspect, linecache --------------------------------------

def test_traceback_shows_the_generated_apply_line(generated_mode):
    op = flow.ops.get("add")
    with pytest.raises(ValueError, match="cannot be broadcast") as info:
        op.apply(flow.ones(2), flow.ones(3))
    text = "".join(traceback.format_exception(info.value))
    assert 'File "<jflow-generated apply:add>", line' in text
    # the line itself (the executable's call), not only the file name
    frame = [f for f in traceback.extract_tb(info.tb) if f.filename.endswith("apply:add>")][0]
    assert frame.line and frame.line in op.apply._source
    assert "_f(_v0, _v1)" in frame.line and frame.line in text


def test_traceback_shows_the_generated_parser_line(generated_mode):
    with pytest.raises(TypeError, match="invalid combination") as info:
        flow._C.add(flow.ones(2), "x")
    text = "".join(traceback.format_exception(info.value))
    assert 'File "<jflow-generated parser:add>"' in text
    assert "raise _bad_call('add', _sigs, args, kwargs)" in text


def test_getsource_of_generated_functions(generated_mode):
    op = flow.ops.get("mul")
    src = inspect.getsource(op.apply)
    assert src.startswith("def apply(") and src == op.apply._source
    assert inspect.getsource(flow._C.relu).startswith("def relu(")
    # the tape's text, as graph.TAPE_SRC holds it
    assert "node.saved = [(out._meta, _ref(out), 0, 0)]" in inspect.getsource(graph.record1)
    # checkcache (run by traceback printing) never drops a generated file: no mtime to check
    linecache.checkcache()
    assert linecache.getline(_codegen.filename("apply", "mul"), 1).startswith("def apply(")
    assert inspect.getsourcefile(op.apply) == "<jflow-generated apply:mul>"


def test_pdb_lists_the_generated_lines(generated_mode):
    out = io.StringIO()
    dbg = pdb.Pdb(stdin=io.StringIO("l\nc\n"), stdout=out, nosigint=True)
    dbg.use_rawinput = False
    r = dbg.runcall(flow.ops.get("add").apply, flow.ones(2), flow.ones(2))
    assert r.tolist() == [2.0, 2.0]
    text = out.getvalue()
    assert "> <jflow-generated apply:add>(2)apply()" in text
    assert "def apply(x, y):" in text and "_watch[0](_op, (x, y, ))" in text


def test_stats_count_every_generator(generated_mode):
    x = flow.tensor(RS.randn(3).astype(np.float32), requires_grad=True)
    (x * x).sum().backward()  # (a two-input rule's saver)
    s = _codegen.stats()
    for kind in ("apply", "parser", "profiled", "tape_record", "lazy_record", "saver2"):
        assert s[kind]["functions"] >= 1 and s[kind]["lines"] >= 2, kind
    ops = len(flow.ops.list_ops())
    assert s["apply"]["sources"] == ops  # one text per op
    assert s["apply"]["lines"] > 10 * ops


def test_sources_are_bounded_per_kind():
    _codegen.LIMITS["test_kind"] = 3
    try:
        names = [f"f{i}" for i in range(5)]
        for i, n in enumerate(names):
            fn = _codegen.define("test_kind", n, f"def g():\n    return {i}\n", {})["g"]
            assert fn() == i and fn._source.endswith(f"return {i}\n")
        kept = [n for n in names if _codegen.filename("test_kind", n) in linecache.cache]
        assert kept == names[2:]
        assert _codegen.stats()["test_kind"] == {"functions": 5, "sources": 3, "lines": 6,
                                                 "twins": 0}
        # a name made again replaces its text (per-op kinds stay one text per op)
        _codegen.define("test_kind", "f4", "def g():\n    return 9\n", {})
        assert _codegen.stats()["test_kind"]["sources"] == 3
        assert linecache.getline(_codegen.filename("test_kind", "f4"), 2).strip() == "return 9"
    finally:
        del _codegen.LIMITS["test_kind"]
        for n in ("f2", "f3", "f4"):
            linecache.cache.pop(_codegen.filename("test_kind", n), None)
        _codegen._SOURCES.pop("test_kind", None)
        _codegen._MADE.pop("test_kind", None)


def test_a_twin_needs_closure_free_code():
    def outer():
        k = 1

        def g():
            return k
        return g
    fn = _codegen.define("test_kind2", "g", "def g():\n    return 2\n", {})["g"]
    with pytest.raises(ValueError, match="no closure"):
        _codegen.register_twin(fn, fn.__code__, outer().__code__)
    linecache.cache.pop(_codegen.filename("test_kind2", "g"), None)
    _codegen._SOURCES.pop("test_kind2", None)
    _codegen._MADE.pop("test_kind2", None)


def test_set_codegen_checks_its_argument():
    with pytest.raises(TypeError, match="set_codegen: flag must be a bool"):
        flow.config.set_codegen(0)


# -- plain mode ---------------------------------------------------------------------------

def test_plain_mode_switches_code_in_place(plain_mode):
    op = flow.ops.get("add")
    assert op.apply.__code__.co_filename.endswith("dispatch.py")
    assert flow._C.add.__code__.co_filename.endswith("codegen.py")
    assert graph.record1.__code__.co_name == "_record1_plain"
    assert lazy_record.record_lazy2.__code__.co_name == "_record_lazy2_plain"
    # the signatures stay the op's and the entry's (the plain code takes *args, **kwargs)
    assert str(inspect.signature(flow.ops.get("leaky_relu").apply)) == "(x, *, alpha=0.01)"
    assert "input" in inspect.signature(flow._C.relu).parameters
    r_plain = flow.max(flow.ones(2, 3), dim=1)  # (a named tuple: the parser's own class)
    flow.config.set_codegen(True)
    assert type(flow.max(flow.ones(2, 3), dim=1)) is type(r_plain)
    assert r_plain._fields == ("values", "indices")
    assert op.apply.__code__.co_filename == "<jflow-generated apply:add>"
    assert graph.record1.__code__.co_filename == "<jflow-generated tape_record:record1>"


def _eager_program():
    rs = np.random.RandomState(7)  # (the same data in both modes)
    x = flow.tensor(rs.randn(4, 6).astype(np.float32), requires_grad=True)
    w = flow.tensor(rs.randn(3, 6).astype(np.float32), requires_grad=True)
    b = flow.tensor(rs.randn(3).astype(np.float32), requires_grad=True)
    y = F.linear(x, w, b)                       # structured op (an optional input)
    y2 = F.linear(x, w)                         # the same op without it
    z = flow.cat([y, y2], dim=1)                # variadic input
    v, i = flow.max(z, dim=1)                   # two outputs
    a = F.leaky_relu(z, 0.1) + F.leaky_relu(z, 0.3)  # dynamic attr, second value
    c = (a * 2.0 - z.tanh()).sum() + v.sum()
    c.backward()
    with flow.no_grad():
        d = x.exp().clamp(max=2.0).mean(0)
    return [c, i, d, x.grad, w.grad, b.grad]


def test_plain_mode_eager_autograd_identical():
    flow.manual_seed(0)
    gen, plain = _both_modes(lambda: _np(_eager_program()))
    _assert_same(gen, plain)


def test_plain_mode_inplace_version_check_identical():
    def run():
        rs = np.random.RandomState(8)  # (the same data in both modes)
        x = flow.tensor(rs.randn(5).astype(np.float32), requires_grad=True)
        y = x * 1.0
        z = y * y  # saves y (needed by both gradients)
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
        a = flow.tensor(rs.randn(5).astype(np.float32))  # (no grad)
        b = x * 1.0
        u = a * b  # saves b for a's gradient, which is not needed: not version-checked
        b.add_(1.0)
        u.sum().backward()
        return _np(x.grad)
    gen, plain = _both_modes(run)
    _assert_same(gen, plain)


def test_plain_mode_errors_identical():
    def errors():
        out = []
        for call in (lambda: flow._C.add(flow.ones(2), "x"),
                     lambda: flow._C.relu(),
                     lambda: flow._C.relu(flow.ones(2), flow.ones(2)),
                     lambda: flow._C.relu(flow.ones(2), bogus=1),
                     lambda: flow._C.leaky_relu(flow.ones(2), "a"),
                     lambda: flow.ops.get("add").apply(flow.ones(2), 3)):
            with pytest.raises(TypeError) as info:
                call()
            out.append(str(info.value).replace("apply()", "").replace("add.", ""))
        return out
    gen, plain = _both_modes(errors)
    assert gen == plain


def test_numbers_as_tensors_in_both_modes():
    """api.yaml's ``numbers_as_tensors`` (PyTorch's add / sub / mul / div family): a Python
    number for the first Tensor becomes a 0-dim tensor of its own type; values and dtypes as
    PyTorch 2.13 gives them (HF LED calls torch.div(int, int, rounding_mode="floor"))."""
    def run():
        outs = [flow.div(5, 2, rounding_mode="floor"), flow.add(5, 2.5), flow.mul(True, True),
                flow._C.sub(input=5, other=2), flow.subtract(5, 2, alpha=2),
                flow.true_divide(5, 2), flow.divide(7.0, 2, rounding_mode="trunc"),
                flow.floor_divide(-7, 2), flow.multiply(2 + 1j, 1)]
        got = [(str(t.dtype), t.shape, t.numpy().item()) for t in outs]
        for bad in (lambda: flow.div(5, "a"), lambda: flow.div(input=5, other="a"),
                    lambda: flow.eq(5, 2)):
            with pytest.raises(TypeError) as info:
                bad()
            got.append(str(info.value).splitlines()[0])
        return got
    gen, plain = [_in_mode(flag, run) for flag in (True, False)]
    assert gen == plain == [
        ("flow.int64", (), 2), ("flow.float32", (), 7.5), ("flow.bool", (), True),
        ("flow.int64", (), 3), ("flow.int64", (), 1), ("flow.float32", (), 2.5),
        ("flow.float32", (), 3.0), ("flow.int64", (), -4), ("flow.complex64", (), 2 + 1j),
        "div() received an invalid combination of arguments - got (int, str), but expected "
        "one of:",
        "div() received an invalid combination of arguments - got (input=int, other=str), "
        "but expected one of:",
        "eq() received an invalid combination of arguments - got (int, int), but expected "
        "one of:"]


def _lazy_step(x, w):
    y = (x @ w).tanh() * 1.5
    loss = (y * y).mean() + w.abs().sum() * 0.01
    loss.backward()
    return loss


def test_plain_mode_lazy_and_backward_templates_identical():
    xs = RS.randn(4, 8, 5).astype(np.float32)
    w0 = RS.randn(5, 3).astype(np.float32)

    def run():
        lazy_backward.TEMPLATES.clear()
        before = lazy_backward.stats()["matched"]
        out = []
        w = flow.tensor(w0, requires_grad=True)
        for k in range(4):
            with flow.lazy():
                loss = _lazy_step(flow.tensor(xs[k]), w)
            out.append(_np(loss))
            out.append(_np(w.grad))
            w.grad = None
        return out, lazy_backward.stats()["matched"] - before
    # a first run leaves the lazy caches as both compared runs then find them: a key's first
    # sighting runs node by node or compiles by what was seen before (compile_cache), and a
    # compiled segment may round a reduction differently from the node-by-node run
    _in_mode(True, run)
    (gen, m_gen), (plain, m_plain) = _both_modes(run)
    _assert_same(gen, plain)
    assert m_gen >= 2 and m_plain == m_gen  # the plain matcher accepts the same steps


def test_plain_mode_lazy_matcher_declines_what_the_generated_one_declines():
    w0 = RS.randn(5, 3).astype(np.float32)
    x0 = RS.randn(8, 5).astype(np.float32)

    def run():
        lazy_backward.TEMPLATES.clear()
        w = flow.tensor(w0, requires_grad=True)
        with flow.lazy():
            _lazy_step(flow.tensor(x0), w)
        w.grad = None
        with flow.lazy():  # the same structure, a saved tensor modified in place
            y = (flow.tensor(x0) @ w)
            t = y.tanh()
            loss = (t * t).mean()
            t.mul_(2.0)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                loss.backward()
        return [_np(w.grad)]
    gen, plain = _both_modes(run)
    _assert_same(gen, plain)


def test_plain_mode_compiled_calls_identical():
    def run():
        flow.manual_seed(1)
        rs = np.random.RandomState(3)  # (the same data in both modes)
        model = flow.nn.Sequential(flow.nn.Linear(5, 4), flow.nn.ReLU(), flow.nn.Linear(4, 1))
        opt = flow.optim.SGD(model.parameters(), lr=0.1)

        @flow.jit
        def step(x):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        out = [_np(step(flow.tensor(rs.randn(3, 5).astype(np.float32)))) for _ in range(4)]
        out += [_np(p) for p in model.parameters()]
        return out, step._fast is not None
    (gen, fast_gen), (plain, fast_plain) = _both_modes(run)
    _assert_same(gen, plain)
    assert fast_gen and not fast_plain  # plain mode: every call computes its key


def test_plain_mode_profiler_still_times_ops(plain_mode):
    x = flow.ones(3)
    with flow.profiler.profile() as prof:
        (x + x).exp()
    names = {e.name for e in prof.events()}
    assert {"add", "exp"} <= names
    assert flow.ops.get("add").apply.__code__.co_filename.endswith("dispatch.py")


def test_environment_variable_sets_plain_mode_at_import():
    code = ("import jflow as flow; op = flow.ops.get('mul'); "
            "print(flow.config.codegen_enabled(), op.apply.__code__.co_filename.endswith("
            "'dispatch.py'), flow.mul(flow.ones(2), 3.0).tolist())")
    env = dict(os.environ, JFLOW_CODEGEN="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "False True [3.0, 3.0]"
