"""The eager tape (caller 1 of the one backward rule): backward, autograd.grad, accumulation,
retain_graph, hooks, retain_grad, detach, grad mode, version counters, autograd.Function,
create_graph, memory. References are NumPy formulas or JAX's own jnp autodiff."""

from __future__ import annotations

import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.autograd import GradientNotFoundError
from jflow.autograd.graph import Node
from jflow.kernels import register_kernel
from jflow.ops import define_op
from jflow.ops.infer import same_as_input

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
W = np.array([[0.2, -0.4, 0.6], [0.1, 0.3, -0.5]])

# an op with a kernel but neither a backward rule nor NoGrad
define_op("test_autograd_norule", inputs=["x"], outputs=["y"], infer=same_as_input("float"))
register_kernel("test_autograd_norule", lambda x: x * 3)


def leaf(a: np.ndarray) -> flow.Tensor:
    return flow.tensor(a, requires_grad=True)


def test_backward_matches_analytic_gradient() -> None:
    x, w = leaf(X), leaf(W)
    loss = (x * w).tanh().sum()
    assert loss.grad_fn is not None and not loss.is_leaf
    loss.backward()
    t = np.tanh(X * W)
    np.testing.assert_allclose(x.grad.numpy(), (1 - t ** 2) * W, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), (1 - t ** 2) * X, rtol=1e-12)
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_broadcast_gradients_are_reduced_to_input_shapes() -> None:
    a, b = leaf(np.ones((3, 1))), leaf(np.ones((1, 4)))
    (a * 2.0 + b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (1, 4)
    np.testing.assert_array_equal(a.grad.numpy(), np.full((3, 1), 8.0))
    np.testing.assert_array_equal(b.grad.numpy(), np.full((1, 4), 3.0))


def test_integer_inputs_get_no_gradient() -> None:
    i = flow.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="floating point"):
        i.requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        flow.tensor([1, 2], requires_grad=True)
    x = leaf(np.array([1.0, 2.0, 3.0]))
    y = (x * i).sum()  # int promoted to float: only x is differentiated
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])
    assert i.grad is None
    c = x > 1.5  # comparisons are NoGrad: a bool result that does not require grad
    assert not c.requires_grad and c.grad_fn is None


def test_autograd_grad_unused_inputs() -> None:
    x, u = leaf(X), leaf(W)
    y = (x * x).sum()
    gx, gu = flow.autograd.grad(y, [x, u], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), 2 * X)
    assert gu is None
    assert x.grad is None  # autograd.grad leaves .grad alone
    with pytest.raises(RuntimeError, match="allow_unused"):
        flow.autograd.grad((x * x).sum(), [x, u])


def test_accumulation_and_retain_graph() -> None:
    x = leaf(X)
    y = x.tanh().sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (1 - np.tanh(X) ** 2), rtol=1e-12)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    x.grad = None
    (x * 3.0).sum().backward()
    (x * 3.0).sum().backward()  # fresh graphs: accumulates without retain_graph
    np.testing.assert_array_equal(x.grad.numpy(), np.full(X.shape, 6.0))


def test_non_scalar_backward_needs_a_gradient() -> None:
    x = leaf(X)
    y = x * 2.0
    with pytest.raises(RuntimeError, match="implicitly created only for scalar"):
        y.backward()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(flow.ones(3))
    y.backward(flow.tensor(W))
    np.testing.assert_allclose(x.grad.numpy(), 2 * W)
    with pytest.raises(RuntimeError, match="does not require grad"):
        flow.tensor(X).sum().backward()


def test_retain_grad_and_hooks() -> None:
    x = leaf(X)
    y = x * 2.0
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    seen = []
    h1 = y.register_hook(lambda g: seen.append(g.numpy().copy()))
    h2 = x.register_hook(lambda g: g * 10.0)  # a returned tensor replaces the gradient
    (y * y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), 4 * X)
    np.testing.assert_allclose(seen[0], 4 * X)
    np.testing.assert_allclose(x.grad.numpy(), 80 * X)
    h1.remove()
    h2.remove()
    x.grad = None
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(X.shape, 2.0))
    assert len(seen) == 1
    with pytest.raises(RuntimeError, match="doesn't require"):
        flow.tensor(X).register_hook(lambda g: g)


def test_detach_and_requires_grad_flags() -> None:
    x = leaf(X)
    y = x * 2.0
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert y.requires_grad and not y.is_leaf
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad_(False)
    z = (d * x).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X)  # no gradient through the detached path
    t = flow.tensor(X)
    t.requires_grad = True
    assert t.requires_grad and t.is_leaf


def test_grad_mode_controls_recording() -> None:
    x = leaf(X)
    with flow.no_grad():
        y = x * 2.0
        with flow.enable_grad():
            z = x * 2.0
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None
    with flow.set_grad_enabled(False):
        assert (x.exp()).grad_fn is None


def test_version_counter_catches_in_place_after_save() -> None:
    x = leaf(X)
    y = x * 1.0
    z = y * y  # mul saves both inputs (y)
    y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    e = x.exp()  # exp saves its output
    e[0, 0] = 5.0
    with pytest.raises(RuntimeError, match="output 0 .* saved by op 'exp'"):
        e.sum().backward()


def test_in_place_ops_join_the_tape() -> None:
    x = leaf(X)
    y = x * 2.0
    y.mul_(y)  # d/dx (2x)^2 = 8x: the in-place op's own save is legitimate
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * X)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1.0)
    with flow.no_grad():
        x.sub_(x.grad * 0.1)  # an optimizer step
    assert x.is_leaf and x.requires_grad
    np.testing.assert_allclose(x.detach().numpy(), X - 0.8 * X)
    b = flow.zeros(2, 3, dtype=flow.float64)
    b[0] = x[1]  # setitem records: b now depends on x
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[1], 8 * X[1] + 1)


def test_missing_rule_raises_when_gradient_flows_in() -> None:
    x = leaf(X)
    op = flow.ops.get("test_autograd_norule")
    y = op(x)
    np.testing.assert_allclose(y.detach().numpy(), 3 * X)  # forward works
    with pytest.raises(GradientNotFoundError,
                       match="the gradient function for op test_autograd_norule is not found"):
        y.sum().backward()
    with pytest.raises(GradientNotFoundError, match="test_autograd_norule"):
        jax.grad(lambda a: op(flow.utils.from_jax(a)).sum()._value)(jnp.asarray(X))


class _Exp(flow.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        y = x.exp() * scale
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, dy):
        (y,) = ctx.saved_tensors
        return dy * y, None


def test_autograd_function() -> None:
    x = leaf(X)
    y = _Exp.apply(x, 2.0)
    assert y.grad_fn is not None and y.grad_fn.name() == "_Exp_backward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(X), rtol=1e-12)
    # second derivative through a Function (its backward runs on the tape with create_graph)
    x2 = leaf(X)
    (g,) = flow.autograd.grad(_Exp.apply(x2, 1.0).sum(), x2, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), np.exp(X), rtol=1e-12)
    # without grad-requiring inputs nothing is recorded
    assert _Exp.apply(flow.tensor(X), 2.0).grad_fn is None


def test_autograd_function_errors() -> None:
    class Bad(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, dy):
            return dy, dy

    with pytest.raises(RuntimeError, match="returned 2 gradients"):
        Bad.apply(leaf(X)).sum().backward()

    class Wrong(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, dy):
            return dy.sum()

    with pytest.raises(RuntimeError, match="expected shape"):
        Wrong.apply(leaf(X)).sum().backward()


def _second_derivative_cases():
    a = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    b = np.array([[0.2, 0.7], [-0.3, 0.1], [0.5, -0.4]])
    pos = np.abs(a) + 0.5
    return [
        ("tanh", lambda t: t.tanh(), jnp.tanh, a),
        ("sigmoid", lambda t: t.sigmoid(), jax.nn.sigmoid, a),
        ("matmul", lambda t: (t @ flow.tensor(b)) @ (t @ flow.tensor(b)).transpose(0, 1),
         lambda v: (v @ b) @ (v @ b).T, a),
        ("softmax", lambda t: flow.softmax(t, dim=1), lambda v: jax.nn.softmax(v, axis=1), a),
        ("log_softmax", lambda t: flow.log_softmax(t, dim=1),
         lambda v: jax.nn.log_softmax(v, axis=1), a),
        ("pow", lambda t: t ** t, lambda v: v ** v, pos),
        ("mul", lambda t: t * t * t, lambda v: v * v * v, a),
    ]


def test_chunk_spans_split_saved_bytes_evenly() -> None:
    from jflow.autograd import compiled_graph as cg

    mib = 1 << 20
    assert cg.chunk_spans([mib] * 20) == ((0, 20),)  # under two CHUNK_BYTES: one program
    sizes = [0] * 10 + [4 * mib] * 10 + [0] * 30 + [2 * mib] * 20
    spans = cg.chunk_spans(sizes)
    total = sum(sizes)
    k = total // cg.CHUNK_BYTES
    assert len(spans) == k == 5
    assert spans[0][0] == 0 and spans[-1][1] == len(sizes)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous
    assert all(hi - lo >= cg.CHUNK_NODES for lo, hi in spans)
    for c, (_, hi) in enumerate(spans[:-1]):  # cut once the spans so far carry their share
        assert sum(sizes[:hi]) * k >= total * (c + 1)
    assert cg.chunk_spans([mib] * 64) == ((0, 16), (16, 32), (32, 48), (48, 64))
    assert cg.chunk_spans([cg.CHUNK_BYTES] * (2 * cg.CHUNK_NODES - 1)) == \
        ((0, 2 * cg.CHUNK_NODES - 1),)  # too few nodes for two spans
    assert cg.chunk_spans([]) == ((0, 0),)


def _after_h(lib, x, w, h):
    """The loss of :func:`_spanned_loss` from its first node's value ``h`` on (``h`` is
    used twice, ``w`` at three depths, ``x`` at two), with ``lib`` jflow or jax.numpy."""
    a = lib.exp(lib.tanh(h) * w) * x
    b = lib.tanh(lib.sin(a) * w + h)
    return lib.sum(lib.cos(b * 1.3) * x * w)


def _spanned_loss(lib, x, w):
    h = x * w
    return h, _after_h(lib, x, w, h)


def test_a_large_graph_runs_its_backward_span_by_span(monkeypatch) -> None:
    """A graph whose saved values exceed ``CHUNK_BYTES`` runs its backward as a chain of
    executables (compiled_graph.Chunked): the same gradients as JAX's autodiff (a leaf used
    in several spans summed across them), a middle node's gradient captured, retain_graph,
    and each span's saved values let go before the next span runs."""
    from jflow.autograd import compiled_graph as cg
    from jflow.autograd.engine import graph_cache

    monkeypatch.setattr(cg, "CHUNK_BYTES", 1)
    monkeypatch.setattr(cg, "CHUNK_NODES", 2)
    released: list[int] = []  # per span call: how many nodes had let their values go
    call = cg.Chunked.__call__

    def counting(f, nodes):
        def run(part, incoming):
            released.append(-1 if nodes is None else sum(n.saved is None for n in nodes))
            return f(part, incoming)
        return run

    def watched(self, saved, roots, release=None):
        spans = self.spans
        self.spans = [(lo, hi, counting(f, release)) for lo, hi, f in spans]
        try:
            return call(self, saved, roots, release)
        finally:
            self.spans = spans

    monkeypatch.setattr(cg.Chunked, "__call__", watched)
    gx_want, gw_want = jax.grad(lambda a, b: _spanned_loss(jnp, a, b)[1], (0, 1))(X, W)
    x, w = leaf(X), leaf(W)
    graph_cache.clear()
    for _ in range(2):
        x.grad = w.grad = None
        released.clear()
        _spanned_loss(flow, x, w)[1].backward()
        np.testing.assert_allclose(x.grad.numpy(), gx_want, rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), gw_want, rtol=1e-12)
        ((f, plan),) = graph_cache.compiled.values()
        assert isinstance(f, cg.Chunked) and len(plan.chunks) >= 4
        # each span's nodes let their saved values go once it is called (the running call
        # holds them): span k starts with spans 0..k-1 released
        assert released == [lo for lo, _ in plan.chunks]
    assert len(graph_cache.compiled) == 1  # the second step reused the chain
    # a middle node's gradient captured (autograd.grad: h's feeds two spans), a leaf's beside
    gh_want = jax.grad(lambda h: _after_h(jnp, X, W, h))(X * W)
    h, loss = _spanned_loss(flow, x, w)
    gh, gx = flow.autograd.grad(loss, [h, x])
    np.testing.assert_allclose(gh.numpy(), gh_want, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gx_want, rtol=1e-12)
    # retain_graph: nothing is let go, and a second backward through the kept values adds up
    x.grad = w.grad = None
    released.clear()
    loss = _spanned_loss(flow, x, w)[1]
    loss.backward(retain_graph=True)
    assert released and released == [-1] * len(released)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * gx_want, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), 2 * gw_want, rtol=1e-12)


@pytest.mark.parametrize("name,fn,ref,x0", _second_derivative_cases(),
                         ids=[c[0] for c in _second_derivative_cases()])
def test_second_derivatives_with_create_graph(name, fn, ref, x0) -> None:
    c = np.linspace(-1.0, 1.0, fn(flow.tensor(x0)).numel()).reshape(fn(flow.tensor(x0)).shape)

    def loss_ref(v):
        return jnp.sum(ref(v) * c)

    x = leaf(x0)
    (g,) = flow.autograd.grad((fn(x) * flow.tensor(c)).sum(), x, create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), jax.grad(loss_ref)(x0), rtol=1e-10, atol=1e-12)
    u = np.cos(np.arange(x0.size)).reshape(x0.shape)  # Hessian-vector product
    (h,) = flow.autograd.grad((g * flow.tensor(u)).sum(), x)
    want = jax.jvp(jax.grad(loss_ref), (jnp.asarray(x0),), (jnp.asarray(u),))[1]
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-9, atol=1e-12)


def test_tape_holds_no_references_after_backward() -> None:
    x = leaf(X)

    def live_nodes() -> int:
        return sum(isinstance(o, Node) for o in gc.get_objects())

    gc.collect()
    gc.disable()
    try:
        base = live_nodes()
        for _ in range(30):
            loss = ((x * 2.0).tanh() * x).sum()
            loss.backward()
            del loss
        assert live_nodes() == base  # freed by refcounting alone: no cycles
    finally:
        gc.enable()
    y = x.exp()
    node = weakref.ref(y.grad_fn)
    y.sum().backward()
    assert y.grad_fn.saved is None  # saved values released after backward
    del y
    assert node() is None


def test_tape_while_tracing_under_jit() -> None:
    @jax.jit
    def step(p: flow.Tensor, data: flow.Tensor) -> flow.Tensor:
        loss = (p * data).tanh().sum()
        loss.backward()
        return p.grad

    p = leaf(X)
    g = step(p, flow.tensor(W))
    t = np.tanh(X * W)
    np.testing.assert_allclose(np.asarray(g._value), (1 - t ** 2) * W, rtol=1e-12)
    assert p.grad is None  # the traced copy got the gradient, not the caller's tensor


def test_grad_fn_introspection() -> None:
    x = leaf(X)
    y = x * 2.0
    z = y.exp()
    assert repr(z.grad_fn) == "<exp_backward>"
    (edge,) = [e for e in z.grad_fn.next_functions if e[0] is not None]
    assert edge[0] is y.grad_fn
    assert "grad_fn=<exp_backward>" in repr(z)


def test_a_repeated_graph_runs_as_one_compiled_backward() -> None:
    from jflow.autograd.engine import graph_cache

    x, w = leaf(X), leaf(W)
    c = flow.tensor(W[:, :1])  # a (2, 1) operand: broadcasting inside the compiled backward
    want_x = None
    graph_cache.compiled.clear()  # (bounded: a full cache would evict as this adds)
    n_before = len(graph_cache.compiled)
    for _ in range(3):
        x.grad = w.grad = None
        loss = ((x * w + c).tanh() * x).sum()
        loss.backward()
        t = np.tanh(X * W + W[:, :1])
        want_x = (1 - t ** 2) * W * X + t
        np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), (1 - t ** 2) * X * X, rtol=1e-12)
    assert len(graph_cache.compiled) == n_before + 1  # compiled once (first sighting), reused
    # autograd.grad through the compiled path, with a non-leaf input
    for _ in range(2):
        h = x * w
        (gh, gx) = flow.autograd.grad((h.exp()).sum(), [h, x])
        np.testing.assert_allclose(gh.numpy(), np.exp(X * W), rtol=1e-12)
        np.testing.assert_allclose(gx.numpy(), np.exp(X * W) * W, rtol=1e-12)


def test_whole_graph_backward_switch_runs_rule_by_rule() -> None:
    """``flow.config.set_whole_graph_backward(False)``: the same gradients, and no
    whole-graph executable is compiled (the memory-lean eager backward)."""
    from jflow.autograd.engine import graph_cache

    with pytest.raises(TypeError, match="set_whole_graph_backward: flag must be a bool"):
        flow.config.set_whole_graph_backward(0)
    x, w = leaf(X), leaf(W)
    graph_cache.compiled.clear()
    old = flow.config.set_whole_graph_backward(False)
    try:
        assert old is True
        for _ in range(2):
            x.grad = w.grad = None
            ((x * w).tanh() * x).sum().backward()
            t = np.tanh(X * W)
            np.testing.assert_allclose(x.grad.numpy(), (1 - t ** 2) * W * X + t, rtol=1e-12)
            np.testing.assert_allclose(w.grad.numpy(), (1 - t ** 2) * X * X, rtol=1e-12)
        assert len(graph_cache.compiled) == 0
    finally:
        assert flow.config.set_whole_graph_backward(old) is False
    x.grad = None
    ((x * w).tanh() * x).sum().backward()
    assert len(graph_cache.compiled) == 1  # on again: the whole graph compiles


@pytest.mark.parametrize("name,fn,ref,x0", _second_derivative_cases(),
                         ids=[c[0] for c in _second_derivative_cases()])
def test_second_derivatives_with_jax_hessian(name, fn, ref, x0) -> None:
    c = np.linspace(-1.0, 1.0, fn(flow.tensor(x0)).numel()).reshape(fn(flow.tensor(x0)).shape)

    def loss(v):
        return (fn(flow.utils.from_jax(v)) * flow.tensor(c)).sum()._value

    def loss_ref(v):
        return jnp.sum(ref(v) * c)

    np.testing.assert_allclose(jax.hessian(loss)(jnp.asarray(x0)),
                               jax.hessian(loss_ref)(jnp.asarray(x0)), rtol=1e-9, atol=1e-12)


def test_backward_inputs_and_function_under_jit() -> None:
    x, w = leaf(X), leaf(W)
    (x * w).sum().backward(inputs=[w])  # only w receives a gradient
    np.testing.assert_allclose(w.grad.numpy(), X)
    assert x.grad is None

    @jax.jit
    def step(p: flow.Tensor) -> flow.Tensor:
        _Exp.apply(p, 3.0).sum().backward()  # a Function's backward staged into the program
        return p.grad

    np.testing.assert_allclose(np.asarray(step(leaf(X))._value), 3 * np.exp(X), rtol=1e-12)


def test_cold_and_warm_backward_give_bitwise_equal_training():
    """The first backward of a graph and every later one run the same executable: 50 eager
    Adam steps give bitwise-equal parameters whether the backward cache starts cold or warm."""
    import jflow.nn.functional as F
    from jflow.autograd import engine

    def train() -> list[np.ndarray]:
        flow.manual_seed(0)
        head = flow.nn.Linear(12, 10)
        norm = flow.nn.LayerNorm(12)
        x = flow.tensor(np.random.RandomState(0).randn(4, 6, 12).astype(np.float32))
        tgt = flow.tensor(np.random.RandomState(1).randint(0, 10, (24,)))
        params = list(head.parameters()) + list(norm.parameters())
        opt = flow.optim.Adam(params, lr=1e-2)
        for _ in range(50):
            loss = F.cross_entropy(head(flow.tanh(norm(x))).reshape(24, 10), tgt)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return [p.detach().numpy().copy() for p in params]

    engine.graph_cache.clear()
    cold = train()
    warm = train()
    for a, b in zip(cold, warm):
        np.testing.assert_array_equal(a, b)


def test_leaf_hook_runs_once_on_the_whole_gradient():
    """A leaf used twice: its hook sees the summed gradient once, as PyTorch (and what the
    hook returns replaces the whole gradient)."""
    x = flow.tensor([1.0, 2.0]).requires_grad_()
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    (x * x + x.exp()).sum().backward()
    want = 2 * np.array([1.0, 2.0]) + np.exp([1.0, 2.0])
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], want, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * want, rtol=1e-6)


def _bf16_program(x, w, hook=False):
    h = x.bfloat16() @ w.bfloat16()
    if hook:  # (a hook: the backward runs rule by rule, one executable per node)
        h.register_hook(lambda g: g)
    h = h.tanh()
    return ((h * h + 1.0).float() * 3.0).sum()


def test_the_compiled_backward_rounds_low_precision_gradients_as_each_rule_does():
    """The whole-backward executable gives the gradients the rules give one by one in
    bfloat16 (before: XLA kept fused bfloat16 intermediates in float32, "excess precision",
    and the weight gradient differed by up to an ulp)."""
    rs = np.random.RandomState(1)
    xn, wn = rs.randn(16, 8).astype(np.float32), rs.randn(8, 8).astype(np.float32)
    grads = []
    for hook in (False, True):
        w = flow.tensor(wn, requires_grad=True)
        _bf16_program(flow.tensor(xn), w, hook).backward()
        grads.append(w.grad.numpy())
    np.testing.assert_array_equal(grads[0], grads[1])
