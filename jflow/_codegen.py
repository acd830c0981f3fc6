"""The one way jflow generates Python source at run time: registered, counted, switchable.

Eight hot paths are straight-line code generated for one op, one api.yaml entry or one graph
(a loop over a description costs about twice as much as the same checks written out). Every
generator passes its text through :func:`define` (or :func:`compile_source`), which

- compiles it under a file name that says which generator made it and for what —
  ``<jflow-generated apply:add>``, ``<jflow-generated parser:conv2d>`` — and registers the text
  with :mod:`linecache` (as ``(size, None, lines, name)``: no modification time, so
  ``linecache.checkcache`` never drops it). Tracebacks, ``pdb`` and ``inspect.getsource``
  therefore show the generated lines;
- keeps the text on each function it defines (``fn._source``);
- counts the functions and lines made per kind (:func:`stats`);
- bounds what it keeps: one text per (kind, name) — a name made again replaces its text — and
  at most :data:`LIMITS` ``[kind]`` names per kind (the least recently made dropped from
  ``linecache`` beyond it; per-graph kinds are bounded by their own caches too);
- registers each function's *plain twin*: a hand-written Python function with the same
  parameters doing the same thing with loops (see the table). :func:`set_enabled` swaps the
  code object of every live generated function between its generated and its plain code, so
  each reference to it (``op.apply`` held anywhere, ``_C.add``, ``graph.record1`` imported by
  name) switches at once.

Plain mode: ``JFLOW_CODEGEN=0`` in the environment (read once, at import) or
``flow.config.set_codegen(False)`` at any time between calls (not while another thread is in
an op: a call already running finishes with the code it started with). The per-op and
per-entry functions are still generated (the switch back needs them) but never run; the
per-graph code (lazy backward templates, compiled-function fast paths) is not generated at
all in plain mode and is dropped on a switch (:func:`on_switch`), as a cache is.

The generators: per kind, who generates it and per what, the template, the names the text
reads (its globals) and the plain twin.

==============  ===========================================================================
kind            generator (per) / template / names read / plain twin
==============  ===========================================================================
apply           ``dispatch.make_apply`` (op). ``def apply(<inputs>, *, <attrs>)``: watcher,
                attr-key lookup, lazy record, global, call + inline Tensor, tape. Reads
                ``_cache _build _op _prim _watch _lazy _lazy_local _record* _record_lazy*
                _global_apply _T _new _D_<attr> _dflt``. Twin: ``dispatch._plain_apply``,
                a closure over the op (reached as ``_PLAIN``).
profiled        ``dispatch.make_apply`` (op). ``def _profiled(*args, **kwargs)``, swapped in
                by the profiler. Reads ``_profiled_call _op _inner``. Twin: none needed
                (``_inner``, the body it times, switches like ``apply``).
parser          ``functional.codegen.generate`` (api.yaml entry). ``def <entry>(<params>)``:
                one inline check per parameter, then the call; overloads: one matcher
                ``_m<k>`` each, tried in order. Reads ``_F<k> _S<k> _R<k> _c<i>_<k>
                _d<i>_<k> _NO _MISSING _bad_arg _bad_call _Tensor _dtype``. Twin:
                ``codegen._plain_parser`` (reached as ``_PLAIN``).
tape_record     ``autograd.graph._make_record`` (1 and 2 inputs). ``def record<n>(op,
                params, x[, y], out, dyn=())`` around ``graph.TAPE_SRC[n]``. Reads graph's
                module globals (``TAPE_NAMES``, ``_state``, ``_DIFF``). Twins:
                ``graph._record1_plain`` / ``_record2_plain`` (``_save``, not ``_saver2``).
saver2          ``autograd.graph._saver2`` (rule and needs: at most 3 per rule).
                ``def save(x, y, out): return [...]``. Reads ``_ref LEAF``. Twin: the plain
                ``record2`` calls ``graph._save`` instead.
lazy_record     ``lazy_mode.record._make`` (1 and 2 inputs). ``def record_lazy<n>(seg, f,
                x[, y], dv, op, params)``: input checks, wiring, the lazy output, then
                ``TAPE_SRC[n]``. Reads ``_general LazyRef LazyTensor _AVALS HOST_OPS
                _segment`` and ``TAPE_NAMES``. Twin: ``_general`` (``Segment.add``, then
                ``record1`` / ``record2``).
lazy_backward   ``lazy_mode.backward._matcher`` (template; at most ``PER_ROOT * ROOTS``
                live). ``def match(n0)``: per node and edge of the plan, identity and
                equality tests. Reads ``OP<k> P<k> NEEDS<k> IA<k> OA<k> Node LazyRef Tracer
                LEAF``. Twin: ``_match_plain``, a loop over the template's specs (chosen
                when the template is built).
fast_path       ``compiler.fast_path._compile`` (armed compiled call; 64 texts kept).
                ``def inputs(F, owner, args)`` and ``def write_back(F, out, ...)``. Reads
                the call's objects as constants ``k<i>``. Twin: the key path
                (``FastPath.arm`` returns None; an armed ``inputs`` answers None).
==============  ===========================================================================
"""

from __future__ import annotations

import linecache
import os
import threading
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["define", "compile_source", "filename", "enabled", "set_enabled", "on_switch",
           "register_twin", "twin_codes", "current_code", "stats", "LIMITS"]

#: names kept per kind (linecache entries; the least recently made dropped beyond it)
LIMITS: dict[str, int] = {"lazy_backward": 1024, "fast_path": 64}
_DEFAULT_LIMIT = 4096

#: ``[bool]``: generated code runs (True) or the plain twins do (``JFLOW_CODEGEN=0``)
_ENABLED = [os.environ.get("JFLOW_CODEGEN", "1").strip().lower() not in ("0", "false", "off",
                                                                          "no")]
_LOCK = threading.RLock()
#: kind -> {file name: lines}, in order of last registration
_SOURCES: dict[str, dict[str, int]] = {}
#: kind -> functions generated so far (a count: defining the same name twice counts twice)
_MADE: dict[str, int] = {}
#: live generated functions -> (generated code, plain code)
_TWINS: weakref.WeakKeyDictionary[Callable, tuple[types.CodeType, types.CodeType]] = \
    weakref.WeakKeyDictionary()
_SWITCH_HOOKS: list[Callable[[bool], None]] = []


def enabled() -> bool:
    """Whether generated code runs (False: every generator's plain twin runs)."""
    return _ENABLED[0]


def filename(kind: str, name: str) -> str:
    """The file name generated code of ``kind`` for ``name`` is compiled under."""
    return f"<jflow-generated {kind}:{name}>"


def compile_source(kind: str, name: str, source: str) -> types.CodeType:
    """Compile ``source`` as :func:`filename` ``(kind, name)`` and register its text with
    linecache (replacing an earlier text of that name); counted and bounded per kind."""
    fname = filename(kind, name)
    code = compile(source, fname, "exec")
    lines = source.splitlines(keepends=True)
    with _LOCK:
        kept = _SOURCES.setdefault(kind, {})
        kept.pop(fname, None)
        kept[fname] = len(lines)
        linecache.cache[fname] = (len(source), None, lines, fname)
        limit = LIMITS.get(kind, _DEFAULT_LIMIT)
        while len(kept) > limit:
            old = next(iter(kept))
            del kept[old]
            linecache.cache.pop(old, None)
    return code


def define(kind: str, name: str, source: str, namespace: dict[str, Any],
           local_ns: dict[str, Any] | None = None,
           plain: Mapping[str, Callable[..., Any]] | None = None,
           code: types.CodeType | None = None) -> dict[str, Any]:
    """Run generated ``source`` (of ``kind``, for ``name``) with globals ``namespace`` (and
    ``local_ns`` as its locals, when given) and return the functions it defines at top level,
    by name, each with ``_source``.

    ``plain`` maps a defined function's name to its plain twin: a function with the same
    parameters, no closure, whose code reads only names the generated function's globals
    hold. The generated function then runs the twin's code in plain mode (see the module
    docstring); the two codes are swapped on :func:`set_enabled`. ``code``: ``source``
    compiled by :func:`compile_source` before (a generator that caches code by its text)."""
    if code is None:
        code = compile_source(kind, name, source)
    target = namespace if local_ns is None else local_ns
    exec(code, namespace, target)  # noqa: S102  (our own text: see the module docstring)
    fname = code.co_filename
    out = {k: v for k, v in target.items()
           if isinstance(v, types.FunctionType) and v.__code__.co_filename == fname}
    with _LOCK:
        _MADE[kind] = _MADE.get(kind, 0) + len(out)
    for k, fn in out.items():
        fn._source = source
        if plain is not None and k in plain:
            register_twin(fn, fn.__code__, plain[k].__code__)
    return out


def register_twin(fn: Callable[..., Any], generated: types.CodeType,
                  plain: types.CodeType) -> None:
    """Make ``fn`` switch between code ``generated`` and ``plain`` (now: the current mode's)."""
    if generated.co_freevars or plain.co_freevars:
        raise ValueError(f"jflow._codegen.register_twin: {fn.__name__}'s codes must have no "
                         f"closure (free variables {generated.co_freevars or plain.co_freevars})")
    with _LOCK:
        _TWINS[fn] = (generated, plain)
        fn.__code__ = generated if _ENABLED[0] else plain


def twin_codes(fn: Callable[..., Any]) -> tuple[types.CodeType, types.CodeType] | None:
    """``(generated code, plain code)`` of a function with a plain twin, else None."""
    return _TWINS.get(fn)


def current_code(fn: Callable[..., Any]) -> types.CodeType:
    """The code ``fn`` runs in the current mode (its own when it has no twin)."""
    pair = _TWINS.get(fn)
    if pair is None:
        return fn.__code__
    return pair[0] if _ENABLED[0] else pair[1]


def on_switch(hook: Callable[[bool], None]) -> None:
    """Call ``hook(enabled)`` after every switch (per-graph generated code drops its caches)."""
    _SWITCH_HOOKS.append(hook)


def set_enabled(flag: bool) -> bool:
    """Run generated code (True) or the plain twins (False) from now on; returns the previous
    setting. Swaps the code of every live generated function whose code is its other mode's
    (a function swapped to something else, as the profiler does with ``op.apply``, is left:
    its owner asks :func:`current_code` when it swaps back)."""
    if not isinstance(flag, bool):
        raise TypeError(f"flow.config.set_codegen: flag must be a bool, got "
                        f"{type(flag).__name__}")
    with _LOCK:
        old = _ENABLED[0]
        if flag == old:
            return old
        _ENABLED[0] = flag
        for fn, (gen, plain) in list(_TWINS.items()):
            if fn.__code__ is (plain if flag else gen):
                fn.__code__ = gen if flag else plain
        hooks = list(_SWITCH_HOOKS)
    for hook in hooks:
        hook(flag)
    return old


def stats() -> dict[str, dict[str, int]]:
    """Per kind: ``functions`` generated so far, ``sources`` and ``lines`` of the texts kept
    now (registered with linecache), ``twins`` (live functions with a plain twin)."""
    with _LOCK:
        twins: dict[str, int] = {}
        for fn in list(_TWINS.keys()):
            k = _TWINS[fn][0].co_filename.split(" ", 1)[-1].split(":", 1)[0]
            twins[k] = twins.get(k, 0) + 1
        kinds = set(_SOURCES) | set(_MADE)
        return {k: {"functions": _MADE.get(k, 0), "sources": len(_SOURCES.get(k, {})),
                    "lines": sum(_SOURCES.get(k, {}).values()), "twins": twins.get(k, 0)}
                for k in sorted(kinds)}
