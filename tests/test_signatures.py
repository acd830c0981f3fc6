"""Every function generated from api.yaml has a Python-style ``__signature__`` (what
``inspect.signature`` and ``help()`` show) and a docstring with the reference's description.

The signatures are checked against two independent things: the generated parser itself (the
parameter names, kinds and optionality CPython really binds) and PyTorch's documented
signatures (parsed from torch's own docstrings, or written here from PyTorch's docs)."""

from __future__ import annotations

import ast
import functools
import inspect
import pydoc
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import jflow as flow
from jflow.functional import F, load_api
from jflow.functional.signature import LazySignature, overload_policy

ROOT = Path(__file__).resolve().parent.parent
P = inspect.Parameter


def _generated(mod: object) -> dict[str, object]:
    return {n: getattr(mod, n) for n in dir(mod)
            if not n.startswith("_") and hasattr(getattr(mod, n), "_entry")}


def _parser_signature(fn: types.FunctionType) -> inspect.Signature:
    """The signature CPython binds for the generated parser (its code, not __signature__)."""
    raw = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    raw.__kwdefaults__ = fn.__kwdefaults__
    return inspect.signature(raw)


def _shape(sig: inspect.Signature) -> list[tuple[str, object, bool]]:
    return [(p.name, p.kind, p.default is not P.empty) for p in sig.parameters.values()]


def test_every_public_generated_function_has_a_python_signature_and_description() -> None:
    fns = {**_generated(flow), **_generated(flow.nn.functional),
           **{n: getattr(flow._C, n) for n in F.public}}
    assert len(fns) > 300
    for name, fn in fns.items():
        sig = inspect.signature(fn)
        assert isinstance(sig, LazySignature), name
        params = list(sig.parameters.values())
        assert all(p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY) for p in params), name
        entry = fn._entry
        first = entry.signatures[0]
        assert [p.name for p in params] == [p.name for p in first.params], name
        assert sig.return_annotation != inspect.Signature.empty, name
        doc = inspect.getdoc(fn)
        assert f"{entry.name}{first.describe()} -> {first.ret}" in doc, name
        if entry.doc:
            assert " ".join(entry.doc.split()) in " ".join(doc.split()), name


def test_signatures_are_what_the_parser_binds() -> None:
    """A single signature: names, kinds and which parameters are optional equal the
    generated ``def``'s; the defaults are the yaml's as written. Merged overloads: each
    overload has those names, kinds and optionality."""
    n_single = n_merged = 0
    for entry in F.entries:
        fn = inspect.unwrap(getattr(F, entry.name))  # some are wrapped (functools.wraps)
        sig = inspect.signature(fn)
        policy = overload_policy(entry.signatures)
        if policy == "single":
            n_single += 1
            assert _shape(sig) == _shape(_parser_signature(fn)), entry.name
            for p, yp in zip(sig.parameters.values(), entry.signatures[0].params):
                if yp.has_default:
                    assert p.default == yp.default_as_written, (entry.name, p.name)
        elif policy == "merged":
            n_merged += 1
            for s in entry.signatures:
                assert [(p.name, p.kind == P.KEYWORD_ONLY, p.default is not P.empty)
                        for p in sig.parameters.values()] == \
                    [(p.name, p.kwonly, p.has_default) for p in s.params], entry.name
        else:  # the first overload, and the docstring says so
            assert "shows the first overload" in fn.__doc__, entry.name
    assert n_single > 200 and n_merged > 10


def test_conv2d_as_pytorch_documents_it() -> None:
    """PyTorch: conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1);
    its two overloads (int and string padding) merge into one signature."""
    sig = inspect.signature(flow.nn.functional.conv2d)
    assert [(p.name, p.default) for p in sig.parameters.values()] == [
        ("input", P.empty), ("weight", P.empty), ("bias", None), ("stride", 1),
        ("padding", 0), ("dilation", 1), ("groups", 1)]
    ann = {n: p.annotation for n, p in sig.parameters.items()}
    assert ann["padding"] == "int | Sequence[int] | str"
    assert ann["bias"] == "Tensor | None" and ann["groups"] == "int"
    assert sig.return_annotation == "Tensor"
    text = pydoc.render_doc(flow.nn.functional.conv2d, renderer=pydoc.plaintext)
    assert "conv2d(input: 'Tensor', weight: 'Tensor', bias: 'Tensor | None' = None, " \
           "stride: 'int | Sequence[int]' = 1" in text
    assert "2-d cross-correlation" in text and "*args" not in text


def _torch_documented(fn: object) -> tuple[list[str], list[str], dict[str, object]]:
    """(positional names, keyword-only names, defaults) from the first line of torch's
    docstring (``add(input, other, *, alpha=1, out=None) -> Tensor``), else from
    ``inspect.signature`` for torch's Python functions."""
    doc = (getattr(fn, "__doc__", None) or "").strip()
    m = re.match(r"^\w+\((.*?)\)\s*->", doc, re.S)
    if m:
        args = ast.parse(f"def f({m[1]}): pass").body[0].args
        pos, kw = [a.arg for a in args.args], [a.arg for a in args.kwonlyargs]
        defaults = {a: ast.literal_eval(d) for a, d in
                    zip(pos[len(pos) - len(args.defaults):], args.defaults)}
        defaults.update({a.arg: ast.literal_eval(d) for a, d in
                         zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        return pos, kw, defaults
    sig = inspect.signature(fn)
    ps = sig.parameters.values()
    return ([p.name for p in ps if p.kind == P.POSITIONAL_OR_KEYWORD],
            [p.name for p in ps if p.kind == P.KEYWORD_ONLY],
            {p.name: p.default for p in ps if p.default is not P.empty})


@pytest.mark.parametrize("qualname", [
    "add", "sub", "mul", "where", "clamp", "cumsum", "transpose", "gather", "index_select",
    "addmm", "baddbmm", "matmul", "flatten", "roll", "tril", "cat",
    "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv_transpose2d",
    "nn.functional.pad", "nn.functional.avg_pool2d", "nn.functional.layer_norm",
    "nn.functional.group_norm", "nn.functional.interpolate", "nn.functional.embedding",
    "nn.functional.dropout", "nn.functional.grid_sample", "nn.functional.cosine_similarity",
    "nn.functional.scaled_dot_product_attention",
])
def test_names_and_defaults_match_pytorch(qualname: str) -> None:
    def resolve(root: object) -> object:
        return functools.reduce(getattr, qualname.split("."), root)

    fn = resolve(flow)
    assert hasattr(fn, "_entry"), f"flow.{qualname} is not generated from api.yaml"
    pos, kw, defaults = _torch_documented(resolve(torch))
    sig = inspect.signature(fn)
    ours_pos = [p.name for p in sig.parameters.values() if p.kind == P.POSITIONAL_OR_KEYWORD]
    assert ours_pos == pos[:len(ours_pos)], (ours_pos, pos)
    # what PyTorch requires positionally, jflow requires (or defaults identically)
    for p in sig.parameters.values():
        if p.name in defaults and p.default is not P.empty:
            want = defaults[p.name]
            assert p.default == want or (isinstance(want, list) and p.default == tuple(want)), \
                (p.name, p.default, want)


def test_bound_partial_and_user_yaml() -> None:
    """``replace`` (partials, bound methods) works on the lazy signature; a user's yaml gets
    signatures too, with overloads of different parameters shown as the first."""
    part = functools.partial(flow.nn.functional.conv2d, groups=2)
    assert list(inspect.signature(part).parameters)[-1] == "groups"
    api = load_api('''
- name: "scale"
  signature: ["Tensor (Tensor x, Float alpha=2.0) => S", "Tensor (Tensor x, Tensor y) => S"]
  bind_python: True
  doc: "Scales x."
''', functors={"S": lambda x, a: x})
    sig = inspect.signature(api.scale)
    assert str(sig) == "(x: 'Tensor', alpha: 'float' = 2.0) -> 'Tensor'"
    assert api.scale.__doc__.startswith("Scales x.")
    assert "shows the first overload" in api.scale.__doc__
    assert "scale(Tensor x, Tensor y) -> Tensor" in api.scale.__doc__


def test_import_builds_no_signature() -> None:
    """Signatures are built when first asked for: importing jflow builds none."""
    code = ("import gc, inspect, jflow\n"
            "from jflow.functional.signature import LazySignature\n"
            "objs = [o for o in gc.get_objects() if type(o) is LazySignature]\n"
            "built = sum(o._built is not None for o in objs)\n"
            "inspect.signature(jflow.nn.functional.conv2d).parameters\n"
            "print(len(objs), built, sum(o._built is not None for o in objs))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    n, before, after = map(int, out.stdout.split())
    assert n > 300 and before == 0 and after == 1


def test_forwarding_tensor_methods_show_the_functions_signature() -> None:
    """``x.add`` / ``x.add_`` / ``x.clamp_`` forward to ``flow._C``: their signatures are the
    function's with the tensor as ``self`` (in-place forms without ``inplace``), and every
    forwarding method has one — not ``(*args, **kwargs)``."""
    add = inspect.signature(flow.Tensor.add)
    assert list(add.parameters) == ["self", *list(inspect.signature(F.add).parameters)[1:]]
    assert list(inspect.signature(flow.Tensor.add_).parameters) == ["self", "other", "alpha"]
    assert list(inspect.signature(flow.Tensor.clamp_).parameters) == ["self", "min", "max"]
    assert list(inspect.signature(flow.ones(2).atan2_).parameters) == ["other"]
    generic = sorted(n for n, m in vars(flow.Tensor).items()
                     if isinstance(m, types.FunctionType) and not n.startswith("_")
                     and m.__code__.co_flags & inspect.CO_VARARGS
                     and m.__code__.co_flags & inspect.CO_VARKEYWORDS
                     and not hasattr(m, "__signature__") and hasattr(F, n.rstrip("_"))
                     and m.__code__.co_varnames[:3] == ("self", "args", "kwargs")
                     and m.__code__.co_argcount == 1)
    assert not generic, f"Tensor methods forwarding to flow._C without a signature: {generic}"
