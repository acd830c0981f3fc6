"""The eager tape: one :class:`Node` per recorded op call (PyTorch's ``grad_fn``).

``record`` is called by an op's generated ``apply`` only when some input requires grad, so the
no-grad hot path pays one attribute test per input. A node keeps what its rule saved (values
plus the version each saved tensor had), edges to the nodes / leaves of its inputs, and the
avals the rule's ``ctx`` reports. Saved *outputs* are held through weak references (their
values are kept, the tensor objects are not), so a node never keeps its own outputs alive and
the graph has no reference cycles: dropping the loss frees the whole graph by refcounting.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable
from typing import Any

from .. import _codegen
from ..lazy_values import LazyRef, new_lazy, raw, set_raw
from ..tensor import Tensor, new_tensor
from .grad_mode import _state
from .rule import is_differentiable_dtype

__all__ = ["Node", "record", "LEAF"]

#: ``output_nr`` of an edge that points at a leaf tensor (accumulate into its ``.grad``).
LEAF = -1

#: ``[fn or None]``: while set (by ``flow.jit`` while it traces), every in-place write first
#: passes its target to ``fn`` — so a tensor the traced code writes without it being state
#: of the step (a captured tensor) is found instead of left holding a tracer.
_WRITES: list[Any] = [None]


def watch_writes(fn: Any) -> Any:
    """Install ``fn(target)`` as the in-place write watcher (None removes it); returns the
    previous one."""
    old = _WRITES[0]
    _WRITES[0] = fn
    return old


_SEQ = itertools.count()


def seq_now() -> int:
    """A sequence number above every node recorded so far (and below every later one)."""
    return next(_SEQ)


class Node:
    """A recorded op call. ``next_edges[i]`` is ``(node, output_nr)`` or ``(leaf, LEAF)``
    for each flat input that needs a gradient, else ``None``."""

    # ``seq``: when it was recorded. A node is recorded after the nodes of its inputs, so
    # decreasing ``seq`` is a topological order for the backward (engine._topological)
    __slots__ = ("op", "params", "dyn", "saved", "next_edges", "needs", "in_avals", "out_avals",
                 "hooks", "retained", "seq", "__weakref__")

    def __init__(self, op: Any, params: dict[str, Any], needs: tuple[bool, ...],
                 next_edges: tuple[Any, ...], in_avals: tuple[Any, ...],
                 out_avals: tuple[Any, ...], dyn: tuple[Any, ...] = ()) -> None:
        self.op = op
        self.params = params
        # the values of the call's dynamic attrs (params hold DYNAMIC for them): kept apart so
        # the rule's executables are cached by the static params, not by every value
        self.dyn = dyn
        self.needs = needs
        self.next_edges = next_edges
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.saved: list[tuple[Any, Any, int, int]] | None = []
        self.hooks: dict[int, list[Callable]] | None = None
        self.retained: dict[int, Any] | None = None
        self.seq = next(_SEQ)

    def name(self) -> str:
        return f"{self.op.name}_backward"

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    def release(self) -> None:
        """Drop saved values (after a backward without ``retain_graph``)."""
        if self.saved:
            self.saved = None

    @property
    def freed(self) -> bool:
        """True once the saved values were released (a node that saved nothing never is)."""
        return self.saved is None

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """PyTorch-style view of the edges: ``(node or leaf tensor or None, output_nr)``."""
        return tuple(e if e is not None else (None, 0) for e in self.next_edges)


def version_error(node: Node, value: Any, nr: int, now: int, saved: int) -> RuntimeError:
    """PyTorch's error for a saved tensor modified in place before the backward."""
    what = f"input of shape {list(value.shape)}" if nr == LEAF else \
        f"output {nr} of shape {list(value.shape)}"
    return RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: the {what} saved by op '{node.op.name}' is at version {now}; "
        f"expected version {saved} instead. Compute the gradient before modifying it, or "
        f"modify a clone.")


_DIFF: dict[Any, bool] = {}


def _differentiable(dtype: Any) -> bool:
    r = _DIFF.get(dtype)
    if r is None:
        r = _DIFF[dtype] = is_differentiable_dtype(dtype)
    return r


def record(op: Any, params: dict[str, Any], ins: Any, out: Any, dyn: tuple = ()) -> Any:
    """Attach a node to the outputs of an op call whose inputs (some) require grad."""
    if not _state.enabled or "NoGrad" in op.traits:
        return out
    needs = tuple([t._requires_grad for t in ins])
    outs = out if out.__class__ is tuple else (out,)
    edges = []
    for t, n in zip(ins, needs):
        if not n:
            edges.append(None)
        elif t.grad_fn is not None:
            edges.append((t.grad_fn, t._output_nr))
        else:
            edges.append((t, LEAF))
    # (``_meta``: a lazy tensor's pending value is recorded, not computed: jflow.lazy_mode)
    out_avals = tuple([t._meta.aval for t in outs])
    node = Node(op, params, needs, tuple(edges), tuple([t._meta.aval for t in ins]), out_avals,
                dyn)
    rule = op.grad_rule
    if rule is not None and rule.save:
        saved = node.saved
        for kind, start, count, _ in rule.saved_slots(params.get("_layout"), len(outs)):
            if kind == "in":
                for t in ins[start:start + count]:
                    saved.append((raw(t), t, t._version, LEAF))
            else:
                for k in range(start, start + count):
                    t = outs[k]
                    saved.append((raw(t), weakref.ref(t), 0, k))
    k = 0
    for t in outs:
        if _differentiable(out_avals[k].dtype):
            t._requires_grad = True
            t.grad_fn = node
            t._output_nr = k
        k += 1
    return out


def record_single(op: Any, params: dict[str, Any], ins: Any, out: Any,
                  dyn: tuple = ()) -> Any:
    """:func:`record` for a one-output op with any number of inputs (a structured op such as
    ``linear``; its generated ``apply`` has checked that some input requires grad)."""
    if not _state.enabled:
        return out
    oa = out._meta.aval
    node = _node_head(op, params, dyn, ins, oa)
    node.saved = saved = []
    rule = op.grad_rule
    if rule is not None and rule.save:
        for kind, start, count, _ in rule.saved_slots(params.get("_layout"), 1):
            if kind == "in":
                for t in ins[start:start + count]:
                    saved.append((raw(t), t, t._version, LEAF))
            else:
                saved.append((out._meta, _ref(out), 0, 0))
    if _DIFF.get(oa.dtype) or _differentiable(oa.dtype):
        out._requires_grad = True
        out.grad_fn = node
        out._output_nr = 0
    return out


def rebase_inplace(target: Any, result: Any, fname: str) -> Any:
    """An in-place op: ``target`` takes ``result``'s value (version bumped) and its history.

    As in PyTorch, a leaf that requires grad cannot be modified in place while grad mode is on
    (use ``flow.no_grad()``, as optimizers do); any other tensor becomes the op's output on the
    tape. The node that computed ``result`` may have saved ``target`` itself as an input: that
    one use of the old value is legitimate, and it stays valid after later writes to
    ``target`` (:func:`keep_original_self`).
    """
    if target._aliases:  # a view: the write goes to its base (jflow.views.alias)
        return target._write_through(result, fname)
    if _WRITES[0] is not None:
        _WRITES[0](target)
    enabled = _state.enabled
    if enabled and target.grad_fn is None and target._requires_grad:
        raise RuntimeError(f"{fname}: a leaf Variable that requires grad is being used in an "
                           f"in-place operation (wrap it in flow.no_grad(), or clone it first)")
    if target._global is not None and result._global != target._global:
        # a global tensor keeps its placement and SBP (the result is boxed to them)
        result = result.to_global(*target._global)
    old = target._version
    node = result.grad_fn if enabled else None
    if node is not None and node.saved:  # (before the write: the old history is kept)
        keep_original_self(node, target, old)
    v = raw(result)  # (pending in lazy mode: the target becomes pending too, nothing runs)
    if v.__class__ is not LazyRef or not set_raw(target, v):
        target._value = result._value
    target._version = old + 1
    if node is not None:
        target.grad_fn = node
        target._output_nr = result._output_nr
        target._requires_grad = True
    elif enabled and target.grad_fn is not None:  # overwritten by a constant: no history
        target.grad_fn = None
        target._requires_grad = False
    return target


def keep_original_self(node: Node, target: Any, old: int) -> None:
    """Before an in-place write of ``node``'s result into ``target`` (at version ``old``): the
    node's saved inputs that are ``target`` itself, as it was, stop following ``target``.

    PyTorch saves a copy of the original ``self`` for an in-place op whose gradient reads it
    (``x.mul_(y)``, ``silu_``, ``sin_``, ``pow_``: its ``original_self``), so writing into
    ``target`` again later (``x += 1`` after ``F.silu(x, inplace=True)``: torchvision's
    EfficientNetV2 residual) does not invalidate the backward. jflow's saved value is the old
    value already (arrays are immutable); its slot now refers to a new handle on that value
    carrying ``target``'s history before the write (so ``create_graph`` differentiates through
    the old value, as through PyTorch's copy), instead of to ``target``."""
    handle = None
    saved = []
    for val, ref, ver, nr in node.saved:  # type: ignore[union-attr]
        if nr == LEAF and ref is target and ver == old:
            if handle is None:
                handle = history_handle(target, val)
            saved.append((val, handle, 0, nr))
        else:
            saved.append((val, ref, ver, nr))
    node.saved = saved


def history_handle(t: Any, value: Any = None) -> Tensor:
    """A new tensor on ``t``'s value (``value``: the same, already read) and ``t``'s autograd
    history, that later in-place writes to ``t`` do not change: what an in-place op made of
    several ops computes from (``F.mish(x, inplace=True)``), as PyTorch's in-place op reads
    its original ``self``."""
    v = raw(t) if value is None else value
    handle = new_lazy(v) if v.__class__ is LazyRef else new_tensor(Tensor, v)
    handle._global = t._global
    if t.grad_fn is not None:
        handle.grad_fn = t.grad_fn
        handle._output_nr = t._output_nr
    handle._requires_grad = t._requires_grad
    return handle


_new = object.__new__
_ref = weakref.ref
_TRUE = (True,)


def _save(node: Node, rule: Any, ins: tuple[Any, ...], out: Any) -> None:
    saved = node.saved
    keep = saved.append
    needs = node.needs
    for is_out, i, needed_for in rule._flat_save:
        if is_out:
            keep((out._meta, _ref(out), 0, 0))
            continue
        t = ins[i]
        if needed_for is not None:
            for j in needed_for:
                if needs[j]:
                    break
            else:  # unused by the gradients this node computes: not version-checked
                keep((t._pending_or_value() if t._aliases else t._meta, None, 0, LEAF))
                continue
        v = t._pending_or_value() if t._aliases else t._meta  # (raw(t), inlined)
        keep((v, t, t._version, LEAF))


def _saver2(rule: Any, needs: tuple[bool, bool]) -> Callable[..., list]:
    """What a two-input rule saves when its inputs need ``needs``: :func:`_save`'s choices
    made once, as a function ``(x, y, out) -> saved`` (generated per rule and needs, kept in
    ``rule._savers2``: at most three per rule)."""
    parts = []
    for is_out, i, needed_for in rule._flat_save:
        if is_out:
            parts.append("(out._meta, _ref(out), 0, 0)")
            continue
        t = "xy"[i]
        v = f"{t}._pending_or_value() if {t}._aliases else {t}._meta"
        if needed_for is None or any(needs[j] for j in needed_for):
            parts.append(f"({v}, {t}, {t}._version, LEAF)")
        else:  # (unused by the gradients this node computes: not version-checked)
            parts.append(f"({v}, None, 0, LEAF)")
    ns: dict[str, Any] = {"_ref": _ref, "LEAF": LEAF}
    src = f"def save(x, y, out):\n    return [{', '.join(parts)}]\n"
    name = f"{getattr(rule.op, 'name', '?')}/{''.join('FT'[n] for n in needs)}"
    fn = _codegen.define("saver2", name, src, ns)["save"]
    rule._savers2[needs] = fn
    return fn


#: The tape's record of a one-output call of an op with one input ``x`` or two inputs ``x``,
#: ``y`` (some requiring grad) whose output is differentiable: the text of :func:`record1` /
#: :func:`record2`'s body, which lazy mode's fused recorders (jflow.lazy_mode.record) inline
#: too — generated from this one text, eager and lazy calls cannot record differently. Free
#: names: ``op, params, dyn, x, y, out``; ``ia`` (the inputs' avals), ``oas`` (the output's,
#: a 1-tuple). A rule's saved values are chosen by :class:`~jflow.autograd.rule.BackwardRule`
#: when it is defined (``_save1``: a one-input rule saving its output or its input).
TAPE_SRC = {1: """\
node = _new(Node)
node.op = op
node.params = params
node.dyn = dyn
node.needs = _TRUE
g = x.grad_fn
node.next_edges = ((g, x._output_nr) if g is not None else (x, LEAF),)
node.in_avals = ia
node.out_avals = oas
node.hooks = node.retained = None
node.seq = next(_SEQ)
rule = op.grad_rule
one = None if rule is None else rule._save1
if one == "out":
    node.saved = [(out._meta, _ref(out), 0, 0)]
elif one == "in":
    node.saved = [(x._pending_or_value() if x._aliases else x._meta, x, x._version, LEAF)]
else:
    node.saved = []
    if rule is not None and rule._flat_save:
        _save(node, rule, (x,), out)
out._requires_grad = True
out.grad_fn = node
out._output_nr = 0
""", 2: """\
node = _new(Node)
node.op = op
node.params = params
node.dyn = dyn
nx, ny = x._requires_grad, y._requires_grad
node.needs = needs = (nx, ny)
g = x.grad_fn
ex = ((g, x._output_nr) if g is not None else (x, LEAF)) if nx else None
g = y.grad_fn
node.next_edges = (ex, ((g, y._output_nr) if g is not None else (y, LEAF)) if ny else None)
node.in_avals = ia
node.out_avals = oas
node.hooks = node.retained = None
node.seq = next(_SEQ)
rule = op.grad_rule
if rule is None or not rule._flat_save:
    node.saved = []
else:
    node.saved = (rule._savers2.get(needs) or _saver2(rule, needs))(x, y, out)
out._requires_grad = True
out.grad_fn = node
out._output_nr = 0
"""}

#: the module names TAPE_SRC reads (a generated recorder's namespace takes them from here)
TAPE_NAMES = ("Node", "LEAF", "_SEQ", "_ref", "_TRUE", "_save", "_saver2")

_RECORD_SRC = """\
def record{n}(op, params, {args}, out, dyn=()):
    if not _state.enabled:
        return out
    oa = out._meta.aval
    if _DIFF.get(oa.dtype) or _differentiable(oa.dtype):
        ia = ({avals})
        oas = (oa,)
{body}
    return out
"""


def _make_record(n: int) -> Callable[..., Any]:
    args = ("x", "y")[:n]
    src = _RECORD_SRC.format(n=n, args=", ".join(args), avals="".join(
        f"{a}._meta.aval, " for a in args), body=_indent(TAPE_SRC[n], 8))
    ns: dict[str, Any] = {}
    plain = _record1_plain if n == 1 else _record2_plain
    return _codegen.define("tape_record", f"record{n}", src, globals(), ns,
                           plain={f"record{n}": plain})[f"record{n}"]


def _node_head(op: Any, params: dict, dyn: tuple, ins: tuple, oa: Any) -> Node:
    """The fields of a node made by ``record1`` / ``record2`` (``TAPE_SRC``'s first lines)."""
    node = _new(Node)
    node.op = op
    node.params = params
    node.dyn = dyn
    node.needs = needs = tuple([t._requires_grad for t in ins])
    node.next_edges = tuple([((t.grad_fn, t._output_nr) if t.grad_fn is not None else
                              (t, LEAF)) if n else None for t, n in zip(ins, needs)])
    node.in_avals = tuple([t._meta.aval for t in ins])
    node.out_avals = (oa,)
    node.hooks = node.retained = None
    node.seq = next(_SEQ)
    return node


def _attach(node: Node, out: Any) -> Any:
    out._requires_grad = True
    out.grad_fn = node
    out._output_nr = 0
    return out


def _record1_plain(op, params, x, out, dyn=()):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
    """``record1``'s plain twin (jflow._codegen): ``TAPE_SRC[1]`` as a plain function. In
    ``record1`` the only input requires grad (``needs`` is ``(True,)``)."""
    if not _state.enabled:
        return out
    oa = out._meta.aval
    if not (_DIFF.get(oa.dtype) or _differentiable(oa.dtype)):
        return out
    node = _node_head(op, params, dyn, (x,), oa)
    rule = op.grad_rule
    node.saved = []
    if rule is not None and rule._flat_save:
        _save(node, rule, (x,), out)
    return _attach(node, out)


def _record2_plain(op, params, x, y, out, dyn=()):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
    """``record2``'s plain twin (jflow._codegen): ``TAPE_SRC[2]`` with :func:`_save` in place
    of the generated ``_saver2``."""
    if not _state.enabled:
        return out
    oa = out._meta.aval
    if not (_DIFF.get(oa.dtype) or _differentiable(oa.dtype)):
        return out
    node = _node_head(op, params, dyn, (x, y), oa)
    rule = op.grad_rule
    node.saved = []
    if rule is not None and rule._flat_save:
        _save(node, rule, (x, y), out)
    return _attach(node, out)


def _indent(text: str, n: int) -> str:
    return "".join(" " * n + line + "\n" for line in text.splitlines())


record1 = _make_record(1)
record1.__doc__ = """:func:`record` for a one-input, one-output op (x requires grad): no loops."""
record2 = _make_record(2)
record2.__doc__ = """:func:`record` for a two-input, one-output op (x or y requires grad): no
loops."""
