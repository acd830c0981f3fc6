"""flow.compile / flow.jit with library-style containers (dataclasses, transformers-like
ModelOutput, cache objects, pytree-registered classes) as results and arguments, and graph
breaks (a read of a traced value runs that signature eagerly under flow.compile; flow.jit and
nn.Graph raise naming the read)."""

import collections
import dataclasses
from typing import NamedTuple

import jax
import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
import jflow.nn.functional as F
from jflow.compiler.jit import GRAPH_BREAK_LIMIT

RS = np.random.RandomState(0)
X = RS.randn(4, 5).astype(np.float32)
Y = RS.randint(0, 3, 4)


class ModelOutput(collections.OrderedDict):
    """A stand-in of transformers' ModelOutput: a dataclass subclassing OrderedDict whose
    dict part holds the fields that are not None."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __getitem__(self, k):
        return dict(self.items())[k] if isinstance(k, str) else self.to_tuple()[k]

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class CausalLMOutput(ModelOutput):
    loss: flow.Tensor | None = None
    logits: flow.Tensor = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None
    past_key_values: object = None


@dataclasses.dataclass
class Plain:
    logits: flow.Tensor
    extra: dict
    note: str = "plain"
    scale: float = 1.0


class Cache:
    """A DynamicCache-like object: per-layer key/value lists and methods."""

    def __init__(self):
        self.keys, self.values, self.seen, self.sizes = [], [], 0, []

    def update(self, k, v, layer):
        if layer < len(self.keys):
            self.keys[layer] = flow.cat([self.keys[layer], k], 0)
            self.values[layer] = flow.cat([self.values[layer], v], 0)
        else:
            self.keys.append(k)
            self.values.append(v)
        self.seen += k.shape[0]
        self.sizes.append(k.shape[0])  # (a list without tensors: kept, copied)
        return self.keys[layer], self.values[layer]

    def length(self):
        return self.keys[0].shape[0] if self.keys else 0


class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b


jax.tree_util.register_pytree_node(
    Pair, lambda p: ((p.a, p.b), None), lambda _, ch: Pair(*ch))


class NT(NamedTuple):
    out: flow.Tensor
    aux: flow.Tensor


class Net(nn.Module):
    def __init__(self, kind="model_output"):
        super().__init__()
        flow.manual_seed(0)
        self.lin = nn.Linear(5, 3)
        self.kind = kind

    def forward(self, x, labels=None, cache=None):
        h = self.lin(x)
        logits = F.gelu(h)
        if self.kind == "model_output":
            loss = None if labels is None else F.cross_entropy(logits, labels)
            return CausalLMOutput(loss=loss, logits=logits, hidden_states=(h, logits))
        if self.kind == "plain":
            return Plain(logits, {"h": h, "nested": [Pair(h, logits)]}, scale=2.0)
        if self.kind == "pytree":
            return Pair(logits, NT(h, logits.sum()))
        if self.kind == "cache":
            cache = Cache() if cache is None else cache
            k, v = cache.update(h, logits, 0)
            return CausalLMOutput(logits=(k * v).sum(0), past_key_values=cache)
        raise ValueError(self.kind)


def _grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()),
                               rtol=tol, atol=tol)


def test_model_output_values_grads_and_cache_hit():
    eager, comp = Net(), Net()
    cm = flow.compile(comp)
    x, y = flow.tensor(X), flow.tensor(Y)
    for _ in range(2):  # the second call runs the cached executable
        eager.zero_grad()
        comp.zero_grad()
        oe, oc = eager(x, labels=y), cm(x, labels=y)
        assert isinstance(oc, CausalLMOutput) and isinstance(oc, collections.OrderedDict)
        assert list(oc.keys()) == ["loss", "logits", "hidden_states"]  # None fields omitted
        assert oc.attentions is None and oc.past_key_values is None
        assert oc["logits"] is oc.logits and oc.to_tuple()[0] is oc.loss
        _close(oc.loss, oe.loss)
        _close(oc.logits, oe.logits)
        _close(oc.hidden_states[0], oe.hidden_states[0])
        for m, o in ((eager, oe), (comp, oc)):
            m.zero_grad()
            (o.loss + o.hidden_states[0].square().sum()).backward()
        for a, b in zip(_grads(eager), _grads(comp)):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    fn = cm._compiled_for()
    assert fn.trace_count == 1 and fn.recompile_reasons == []
    oc = cm(x)  # labels=None: loss is None, not in the dict part (a new signature)
    assert oc.loss is None and list(oc.keys()) == ["logits", "hidden_states"]


@pytest.mark.parametrize("kind", ["plain", "pytree"])
def test_dataclass_and_pytree_outputs(kind):
    eager, comp = Net(kind), Net(kind)
    cm = flow.compile(comp)
    x = flow.tensor(X)
    for _ in range(2):
        eager.zero_grad()
        comp.zero_grad()
        oe, oc = eager(x), cm(x)
        assert type(oc) is type(oe)
        if kind == "plain":
            assert oc.note == "plain" and oc.scale == 2.0
            inner = oc.extra["nested"][0]
            assert isinstance(inner, Pair)
            _close(inner.b, oe.extra["nested"][0].b)
            loss_c = oc.logits.sum() + oc.extra["h"].square().sum() + inner.a.sum()
            loss_e = oe.logits.sum() + oe.extra["h"].square().sum() + oe.extra["nested"][0].a.sum()
        else:
            assert isinstance(oc.b, NT)
            _close(oc.b.aux, oe.b.aux)
            loss_c = oc.a.square().sum() + oc.b.out.sum()
            loss_e = oe.a.square().sum() + oe.b.out.sum()
        _close(loss_c, loss_e)
        loss_e.backward()
        loss_c.backward()
        for a, b in zip(_grads(eager), _grads(comp)):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    fn = cm._compiled_for()
    assert fn.trace_count == 1 and fn._fast is not None  # the second call took the fast path


def test_torch_style_registered_pytree():
    pytree = pytest.importorskip("jflow.utils._pytree")

    class Box:
        def __init__(self, t, tag):
            self.t, self.tag = t, tag

    pytree.register_pytree_node(Box, lambda b: ([b.t], b.tag), lambda ch, tag: Box(ch[0], tag))
    f = flow.compile(lambda b: Box(b.t * 2, b.tag + "!"))
    x = flow.tensor(X)
    for _ in range(2):
        out = f(Box(x, "a"))
        assert isinstance(out, Box) and out.tag == "a!"
        _close(out.t, x * 2)
    assert f._compiled_for().trace_count == 1
    f(Box(x, "b"))  # the context is part of the signature
    assert f._compiled_for().trace_count == 2
    g = flow.compile(lambda x: Box(x * 3, "t"))  # one tensor in a node, on the fast path
    for _ in range(3):
        out = g(x)
        assert isinstance(out, Box) and out.tag == "t"
        _close(out.t, x * 3)
    assert g._compiled_for().trace_count == 1 and g._compiled_for()._fast is not None


def test_cache_object_in_and_out():
    eager, comp = Net("cache"), Net("cache")
    cm = flow.compile(comp)
    x = flow.tensor(X)
    oe, oc = eager(x), cm(x)
    assert isinstance(oc.past_key_values, Cache) and oc.past_key_values.seen == 4
    assert oc.past_key_values.sizes == [4] and type(oc.past_key_values.sizes[0]) is int
    empty = Cache()  # an argument's empty lists: appended to inside, the caller's stay empty
    assert cm(x, cache=empty).past_key_values.length() == 4 and empty.keys == []
    _close(oc.logits, oe.logits)
    for o in (oe, oc):  # gradients through the result and the cache's tensors
        (o.logits.sum() + o.past_key_values.values[0].square().sum()).backward()
    for a, b in zip(_grads(eager), _grads(comp)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    eager.zero_grad()
    comp.zero_grad()
    ce, cc = oe.past_key_values, oc.past_key_values
    for _ in range(2):  # the cache object goes back in; the second round has new shapes
        oe, oc2 = eager(x, cache=ce), cm(x, cache=cc)
        _close(oc2.logits, oe.logits)
        assert oc2.past_key_values.length() == oe.past_key_values.length()
        assert oc2.past_key_values.seen == oe.past_key_values.seen
        assert oc2.past_key_values.sizes == oe.past_key_values.sizes
        # the caller's object is not changed in place: the new state comes back as a result
        assert cc.length() == oc2.past_key_values.length() - 4
        ce, cc = oe.past_key_values, oc2.past_key_values
    fn = cm._compiled_for()
    n = fn.trace_count
    cm(x, cache=oc.past_key_values)  # the same signature as the second call: no new trace
    assert fn.trace_count == n


class Branchy(nn.Module):
    def __init__(self, read):
        super().__init__()
        flow.manual_seed(1)
        self.lin = nn.Linear(5, 3)
        self.read = read

    def forward(self, x):
        h = self.lin(x)
        self.last_h = h  # (the failed trace must not leave a tracer here)
        if self.read == "bool":
            if h.sum() > 0:
                return h * 2
            return h - 1
        if self.read == "mask":  # a result shape that depends on values
            return h + h[h > 0].sum()
        return h * h.abs().mean().item()


@pytest.mark.parametrize("read", ["bool", "item", "mask"])
def test_graph_break_falls_back_and_trains(read):
    eager, comp = Branchy(read), Branchy(read)
    cm = flow.compile(comp)
    oe = flow.optim.AdamW(eager.parameters(), lr=0.1)
    oc = flow.optim.AdamW(comp.parameters(), lr=0.1)
    x, y = flow.tensor(X), flow.tensor(Y)
    for _ in range(3):
        for m, opt in ((eager, oe), (cm, oc)):
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
        for p, q in zip(eager.parameters(), comp.parameters()):
            _close(q, p)
    assert not isinstance(comp.last_h._value, jax.core.Tracer)
    fn = cm._compiled_for()
    assert fn.trace_count == 1  # later calls went straight to the fallback
    (reason,) = fn.recompile_reasons
    assert reason.startswith("graph break: ") and reason.endswith("run eagerly")
    expect = {"bool": "if h.sum() > 0:", "item": ".item()", "mask": "boolean mask"}[read]
    assert expect in reason and "test_compile_containers.py" in reason


def test_graph_breaks_are_bounded():
    f = flow.compile(lambda x: x * 2 if x.sum() > 0 else x - 1)
    fn = f._compiled_for()
    limit = GRAPH_BREAK_LIMIT
    for n in range(1, limit + 3):  # a new shape each call: each breaks, up to the limit
        x = flow.ones(n)
        _close(f(x), x * 2)
        assert fn.trace_count == min(n, limit)
    breaks = [r for r in fn.recompile_reasons if r.startswith("graph break")]
    assert len(breaks) == limit and "every later call runs eagerly" in breaks[-1]


def test_graph_break_is_an_error_for_jit_graph_and_fullgraph():
    m = Branchy("bool")
    x = flow.tensor(X)
    with pytest.raises(RuntimeError, match=r"flow\.jit.*bool\(\) of a traced tensor.*h\.sum"):
        flow.jit(m)(x)
    with pytest.raises(RuntimeError, match=r"bool\(\) of a traced tensor"):
        flow.compile(m, fullgraph=True)(x)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m

        def build(self, x):
            return self.m(x)

    with pytest.raises(RuntimeError, match=r"\.item\(\)|bool\(\)"):
        G()(x)
    _close(m(x), m(x))  # the failed traces left the module usable
