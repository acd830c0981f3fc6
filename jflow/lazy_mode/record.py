"""One lazily recorded op call and its tape node, in one function: the hot path of lazy code.

An op call in lazy mode is recorded twice over: :meth:`Segment.add` appends the call to the
pending segment, and — when an input requires grad — the tape (``graph.record1`` /
``record2``) makes its :class:`~jflow.autograd.graph.Node`. For a one-output op with one or
two tensor inputs (every elementwise op, most reductions: the ops of a small-op training
step) the generated ``apply`` calls the fused ``record_lazy1`` / ``record_lazy2`` below
instead: one frame, the inputs' avals read once, the output made once with its final
fields. About 0.5 µs of the ~2.5 µs an op costs to record with its node.

They handle only what they can do exactly as the general path does: inputs that are plain
tensors (no view, no global tensor, no tracer, no value pending in another segment or
already computed) whose call was recorded before on these avals. Anything else is passed,
before anything was added, to :func:`_general` — ``Segment.add`` and the tape's ``record*``
— which returns what they return (NotImplemented: the call runs as outside lazy mode). The
tape's part is ``graph.TAPE_SRC``, the text ``record1`` / ``record2`` are generated from,
so the node a lazy call records is the node the eager call records.
"""

from __future__ import annotations

from typing import Any

from jax.core import Tracer

from .. import _codegen
from ..autograd import graph as _graph
from ..autograd.grad_mode import _state
from ..kernels.registry import HOST_OPS
from ..lazy_values import LazyRef, LazyTensor
from ..tensor import NEW_FIELDS_SRC
from . import failures as _failures
from . import segment as _segment

__all__ = ["record_lazy1", "record_lazy2"]


def _general(seg: Any, f: Any, ins: tuple, dv: tuple, op: Any, params: dict) -> Any:
    """The call through ``Segment.add`` and, when an input requires grad, the tape."""
    out = seg.add(f, ins, dv, True)
    if out is NotImplemented or op is None or not any(t._requires_grad for t in ins):
        return out
    if len(ins) == 1:
        return _graph.record1(op, params, ins[0], out, dv)
    return _graph.record2(op, params, ins[0], ins[1], out, dv)


# per input: the general path unless it is a plain tensor whose value is this segment's
# pending value or a computed (non-traced) array
_CHECK = """\
    if {x}._aliases or {x}._global is not None:
        return _general(seg, f, ({xs},), dv, op, params)
    v_{x} = {x}._meta
    if v_{x}.__class__ is LazyRef:
        if v_{x}.array is not None or v_{x}.segment is not seg:
            return _general(seg, f, ({xs},), dv, op, params)
    elif _isinstance(v_{x}, Tracer):
        return _general(seg, f, ({xs},), dv, op, params)
"""
# per input: where it comes from (a node's output, or an input of the segment) and its aval
_WIRE = """\
    if v_{x}.__class__ is LazyRef:
        w_{x} = v_{x}.wire
        a_{x} = v_{x}.aval
    else:
        w_{x} = seg.input_ids.get(_id(v_{x}))
        if w_{x} is None:
            w_{x} = seg.new_input(v_{x})
        a_{x} = seg.in_avals[w_{x}]
"""
_RECORD = """\
def record_lazy{n}(seg, f, {xs}, dv, op, params):
{checks}{wires}    ia = ({avals})
    oas = _AVALS.get((f, ia, *_map(_type, dv)) if dv else (f, ia))
    if oas is None:  # (first call on these avals: Segment.add evaluates them)
        return _general(seg, f, ({xs},), dv, op, params)
    n = len(seg.nodes)
    if dv:
        seg.dvs.extend(dv)
    seg.nodes.append((f, ({ws}), len(dv), 1))
    seg.sites.append(_call_site() if HOST_OPS and CALL_SITES[0] and _getattr(
        f, "__name__", None) in HOST_OPS else None)
    oa = oas[0]
    # (the fields of LazyRef.__init__ and values.new_lazy, set here without their two
    # calls: a third of what this function saves per op)
    r = _new(LazyRef)
    r.aval = oa
    r.shape = oa.shape
    r.dtype = oa.dtype
    r.segment = seg
    r.wire = (n, 0)
    r.array = None
    seg.refs.append((r,))
    out = _new(LazyTensor)
    out._meta = r
{fields}    if op is not None and ({needs}) and _state.enabled and (
            _DIFF.get(oa.dtype) or _differentiable(oa.dtype)):
        dyn = dv
{tape}    if n + 1 >= _segment.MAX_NODES:
        seg.flush()
    return out
"""


def _make(n: int) -> Any:
    args = ("x", "y")[:n]
    xs = ", ".join(args)
    src = _RECORD.format(
        n=n, xs=xs, checks="".join(_CHECK.format(x=a, xs=xs) for a in args),
        wires="".join(_WIRE.format(x=a) for a in args),
        avals="".join(f"a_{a}, " for a in args), ws="".join(f"w_{a}, " for a in args),
        needs=" or ".join(f"{a}._requires_grad" for a in args),
        tape=_graph._indent(_graph.TAPE_SRC[n], 8),
        fields=_graph._indent(NEW_FIELDS_SRC.format(t="out"), 4))
    ns = {"_general": _general, "LazyRef": LazyRef, "LazyTensor": LazyTensor,
          "Tracer": Tracer, "_isinstance": isinstance, "_id": id, "_map": map, "_type": type,
          "_getattr": getattr, "_new": object.__new__, "_segment": _segment,
          "_AVALS": _segment._AVALS, "HOST_OPS": HOST_OPS,
          "CALL_SITES": _failures.CALL_SITES, "_call_site": _failures.call_site,
          "_state": _state, "_DIFF": _graph._DIFF, "_differentiable": _graph._differentiable}
    ns.update({k: getattr(_graph, k) for k in _graph.TAPE_NAMES})  # (graph.TAPE_SRC's)
    plain = _record_lazy1_plain if n == 1 else _record_lazy2_plain
    fn = _codegen.define("lazy_record", f"record_lazy{n}", src, ns,
                         plain={f"record_lazy{n}": plain})[f"record_lazy{n}"]
    fn.__doc__ = (f"Record a one-output call of executable ``f`` on {n} tensor(s) into "
                  f"segment ``seg`` and, when ``op`` is not None and an input requires grad, "
                  f"its tape node; the output, or NotImplemented (see the module docstring).")
    return fn


# The plain twins (jflow._codegen): the general path itself. (Run with the generated
# function's globals, which hold ``_general``.)
def _record_lazy1_plain(seg, f, x, dv, op, params):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
    return _general(seg, f, (x,), dv, op, params)


def _record_lazy2_plain(seg, f, x, y, dv, op, params):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
    return _general(seg, f, (x, y), dv, op, params)


record_lazy1 = _make(1)
record_lazy2 = _make(2)
