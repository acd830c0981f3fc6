"""A default lives once: api.yaml's signature is the public source of every default (or, for an
``=> op:`` binding that leaves it out, the op attr's default).

- Functors take no Python defaults for the parameters api.yaml supplies: the generated parser
  passes every yaml parameter, so a functor default could only repeat the yaml one or, worse,
  differ from it. Internal callers of a functor pass every value (or call ``F.<name>``).
- ``flow.nn.functional``, the nn modules and ``flow.arange`` read the defaults they show from
  the functional API (:func:`jflow.functional.api_default`) instead of restating them.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

import jflow as flow
from jflow import _C, creation
from jflow import nn as jnn
from jflow.functional import FUNCTORS, F, api_default, load_api
from jflow.functional.signature import Entry
from jflow.nn import functional as nnF
from jflow.nn.modules import activation, batchnorm, conv, linear, loss, normalization, pooling

#: (functor name, parameter) -> a one-line reason. A functor parameter api.yaml supplies may
#: keep a Python default only here; none needs one today.
ALLOWED: dict[tuple[str, str], str] = {}


def functor_defaults(entries: list[Entry], functors: dict[str, Callable[..., Any]]
                     ) -> list[str]:
    """Every functor parameter that receives a yaml parameter (the parser passes them in
    order) and still has a Python default, as ``"entry: Functor(param=default)"`` lines."""
    out = []
    for e in entries:
        for sig in e.signatures:
            if sig.functor is None:  # => op:name binds the op itself
                continue
            params = list(inspect.signature(functors[sig.functor]).parameters.values())
            assert len(params) >= len(sig.params), (e.name, sig.functor)
            for yp, fp in zip(sig.params, params):
                if fp.default is inspect.Parameter.empty:
                    continue
                if (sig.functor, fp.name) in ALLOWED:
                    continue
                yaml = f"yaml {yp.describe()}" if yp.has_default else "no yaml default"
                out.append(f"{e.name}: {sig.functor}({fp.name}={fp.default!r}) [{yaml}]")
    return sorted(set(out))


def test_functors_have_no_defaults_for_yaml_parameters():
    bad = functor_defaults(F.entries, FUNCTORS)
    assert not bad, ("functor parameters with a Python default (api.yaml supplies every "
                     "one; the yaml signature holds the default):\n" + "\n".join(bad))


def test_the_allow_list_is_needed():
    used = {(s.functor, p) for e in F.entries for s in e.signatures if s.functor
            for p in inspect.signature(FUNCTORS[s.functor]).parameters}
    stale = [k for k in ALLOWED if k not in used
             or inspect.signature(FUNCTORS[k[0]]).parameters[k[1]].default
             is inspect.Parameter.empty]
    assert not stale, f"allow-list entries that no longer apply: {stale}"


@pytest.mark.parametrize("default", [1, 2, None])
def test_a_re_added_functor_default_is_caught(default):
    """A functor default equal to the yaml one (1) or different from it (2, None) is
    reported; the same functor without it is not."""
    def scale(input, alpha=default):
        return input

    def plain(input, alpha):
        return input

    api = load_api('- {name: f, signature: "Tensor (Tensor input, Scalar alpha=1) => Scale"}',
                   functors={"Scale": scale})
    assert functor_defaults(api.entries, dict(FUNCTORS, Scale=scale)) == [
        f"f: Scale(alpha={default!r}) [yaml Scalar alpha=1]"]
    assert functor_defaults(api.entries, dict(FUNCTORS, Scale=plain)) == []


# -- the layers above: nn.functional, nn modules, flow.arange ---------------------------------

def _default_sources(fn: Callable[..., Any]) -> dict[str, ast.expr]:
    """Parameter name -> the default's expression, from ``fn``'s source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    node = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef)))
    a = node.args
    pos = a.posonlyargs + a.args
    out = {p.arg: d for p, d in zip(pos[len(pos) - len(a.defaults):], a.defaults)}
    out.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    return out


def _check_reads_api(fn: Callable[..., Any], param: str, api: str, api_param: str) -> None:
    """``param``'s default in ``fn`` is written ``api_default(api, api_param)`` (or nn.functional's
    alias ``_default``), not a literal, and has that value."""
    where = f"{fn.__qualname__}({param}=...)"
    node = _default_sources(fn).get(param)
    assert node is not None, f"{where}: no default"
    ok = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in ("api_default", "_default") and len(node.args) == 2)
    assert ok, (f"{where}: restates {ast.unparse(node)}; read it from the functional API: "
                f"api_default({api!r}, {api_param!r})")
    names = [eval(ast.unparse(x), fn.__globals__) for x in node.args]  # e.g. _BCE
    assert names == [api, api_param], f"{where}: reads {names}, expected {[api, api_param]}"
    assert inspect.signature(fn).parameters[param].default == api_default(api, api_param)


#: nn.functional functions named after a flow._C function: every parameter of the same name
#: (or renamed here) that has a default in flow._C reads it.
_NNF_RENAMES = {("leaky_relu", "negative_slope"): "alpha"}
_NNF_OTHER_API = {"softmin": "softmax"}  # softmin(x) is softmax(-x)


def _nn_functional_cases() -> list[tuple[Callable[..., Any], str, str, str]]:
    cases = []
    for name in nnF.__all__:
        fn = getattr(nnF, name)
        api = _NNF_OTHER_API.get(name, name)
        if getattr(fn, "__module__", None) != nnF.__name__ or not hasattr(_C, api):
            continue  # re-exported flow._C functions carry their own signature
        api_params = {p.name: p for s in getattr(F, api)._entry.signatures for p in s.params}
        for param in inspect.signature(fn).parameters:
            ap = api_params.get(_NNF_RENAMES.get((name, param), param))
            if ap is not None and ap.has_default:
                cases.append((fn, param, api, ap.name))
    return cases


_NNF_CASES = _nn_functional_cases()


def test_nn_functional_cases_cover_the_wrappers():
    covered = {fn.__name__ for fn, *_ in _NNF_CASES}
    assert {"leaky_relu", "elu", "gelu", "softplus", "hardtanh", "softmax", "log_softmax",
            "softmin", "linear"} <= covered


def _violations(cases: list[tuple[Callable[..., Any], str, str, str]]) -> list[str]:
    """Every case's failure of :func:`_check_reads_api` (one test lists them all)."""
    out = []
    for fn, param, api, api_param in cases:
        try:
            _check_reads_api(fn, param, api, api_param)
        except AssertionError as e:
            out.append(str(e).split("\nassert")[0])
    return out


def test_nn_functional_reads_api_defaults():
    wrong = _violations(_NNF_CASES)
    assert not wrong, "\n".join(wrong)


#: module constructor -> (the flow._C function its forward calls, {param: that function's
#: param}); parameters not listed are the module's own (PyTorch's: ``Flatten(start_dim=1)``,
#: ``bias=True`` for "learn a bias", ``padding_mode``, ``return_indices``, ``norm_type``, ...).
_SAME = object()
_MODULES: list[tuple[Callable[..., Any], str, dict[str, Any]]] = [
    (activation.LeakyReLU.__init__, "leaky_relu", {"negative_slope": "alpha",
                                                   "inplace": _SAME}),
    (activation.ELU.__init__, "elu", {"alpha": _SAME}),
    (activation.GELU.__init__, "gelu", {"approximate": _SAME}),
    (activation.Softplus.__init__, "softplus", {"beta": _SAME, "threshold": _SAME}),
    (activation.Hardtanh.__init__, "hardtanh", {"min_val": _SAME, "max_val": _SAME}),
    (activation.Softmax.__init__, "softmax", {"dim": _SAME}),
    (linear.Flatten.__init__, "flatten", {"end_dim": _SAME}),
    (normalization.Dropout.__init__, "dropout", {"p": _SAME, "inplace": _SAME}),
    (normalization.LayerNorm.__init__, "layer_norm", {"eps": _SAME}),
    (normalization.RMSNorm.__init__, "rms_norm", {"eps": _SAME}),
    (normalization.GroupNorm.__init__, "group_norm", {"eps": _SAME}),
    (normalization.Embedding.__init__, "embedding",
     dict.fromkeys(["padding_idx", "max_norm", "scale_grad_by_freq", "sparse"], _SAME)),
    (batchnorm.BatchNorm2d.__init__, "batch_norm", {"eps": _SAME, "momentum": _SAME}),
    (loss.MSELoss.__init__, "mse_loss", {"reduction": _SAME}),
    (loss.L1Loss.__init__, "l1_loss", {"reduction": _SAME}),
    (loss.NLLLoss.__init__, "nll_loss", dict.fromkeys(["weight", "ignore_index", "reduction"],
                                                      _SAME)),
    (loss.CrossEntropyLoss.__init__, "cross_entropy",
     dict.fromkeys(["weight", "ignore_index", "reduction", "label_smoothing"], _SAME)),
    (loss.BCEWithLogitsLoss.__init__, "binary_cross_entropy_with_logits",
     dict.fromkeys(["weight", "reduction", "pos_weight"], _SAME)),
    (conv.Conv1d.__init__, "conv1d", dict.fromkeys(["stride", "padding", "dilation", "groups"],
                                                   _SAME)),
    (conv.Conv2d.__init__, "conv2d", dict.fromkeys(["stride", "padding", "dilation", "groups"],
                                                   _SAME)),
    (conv.ConvTranspose2d.__init__, "conv_transpose2d",
     dict.fromkeys(["stride", "padding", "output_padding", "groups", "dilation"], _SAME)),
    (pooling.MaxPool2d.__init__, "max_pool2d",
     dict.fromkeys(["stride", "padding", "dilation", "ceil_mode"], _SAME)),
    (pooling.AvgPool2d.__init__, "avg_pool2d",
     dict.fromkeys(["stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"],
                   _SAME)),
    (pooling.Upsample.__init__, "interpolate",
     dict.fromkeys(["size", "scale_factor", "mode", "align_corners", "recompute_scale_factor"],
                   _SAME)),
    (creation.arange, "arange", {"step": _SAME}),
]
_MODULE_CASES = [(fn, p, api, p if ap is _SAME else ap)
                 for fn, api, params in _MODULES for p, ap in params.items()]


def test_nn_modules_read_api_defaults():
    wrong = _violations(_MODULE_CASES)
    assert not wrong, "\n".join(wrong)


def test_a_restated_module_default_is_caught():
    class Restated(jnn.Module):
        def __init__(self, p: float = 0.5) -> None:
            super().__init__()

    with pytest.raises(AssertionError, match=r"restates 0\.5"):
        _check_reads_api(Restated.__init__, "p", "dropout", "p")
    assert [w.split(":")[1].strip() for w in _violations(
        [(Restated.__init__, "p", "dropout", "p")])] == ["restates 0.5; read it from the "
                                                        "functional API"]


def test_list_defaults_are_shown_as_written():
    """``Int64List[2] padding=0`` reaches the functor as (0, 0), and layers show 0."""
    assert api_default("conv2d", "padding") == 0
    assert api_default("conv1d", "stride") == 1
    assert api_default("max_pool2d", "stride") is None
    (p,) = [p for p in F.conv2d._entry.signatures[0].params if p.name == "padding"]
    assert p.default == (0, 0)
    assert api_default("elu", "alpha") == 1.0      # an op attr's default (=> op:elu)
    with pytest.raises(KeyError, match="no default"):
        api_default("conv2d", "weight")
    with pytest.raises(KeyError, match="no parameter"):
        api_default("conv2d", "nope")
    assert repr(flow.nn.MaxPool2d(2)) == ("MaxPool2d(kernel_size=2, stride=2, padding=0, "
                                          "dilation=1, ceil_mode=False)")
