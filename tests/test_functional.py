"""The functional layer: yaml signatures -> generated parsers -> functors.

Most tests load small yaml texts with recording functors, so they check the parser itself
(conversion, overload order, error messages) without running any op.
"""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
from jflow.functional import ApiYamlError, F, load_api
from jflow.functional.signature import NO_DEFAULT, parse_signature


def _record(calls: list, tag: str):
    def functor(*args):
        calls.append((tag, args))
        return tag
    return functor


def _api(yaml_text: str, *tags: str):
    """Load ``yaml_text`` with one recording functor per tag; returns (namespace, calls)."""
    calls: list = []
    return load_api(yaml_text, functors={t: _record(calls, t) for t in tags}), calls


X = flow.tensor([1.0, 2.0])

ALL_TYPES = (
    "Tensor (Tensor x, Int32List[2] k=1, Shape s=None, *, DataType dtype=None, "
    "Device device=None, Generator generator=None, Bool b=True, String mode='mean', "
    "FloatList fl=[1.0, 2.5], Int64List il=None, Placement p=None, Sbp sbp=None, "
    "SbpList sbps=None, TensorTuple ts=None, Scalar alpha=-1, Int64 n=3, Float eps=1e-5, "
    "Double d=2, Int32 i=0) => Rec"
)


# ---- signature parsing --------------------------------------------------------------------

def test_parse_signature_types_defaults_and_keyword_only():
    sig = parse_signature(ALL_TYPES, "test")
    assert sig.ret == "Tensor" and sig.functor == "Rec" and sig.ret_names is None
    by = {p.name: p for p in sig.params}
    assert [p.name for p in sig.params][:3] == ["x", "k", "s"]
    assert by["x"].default is NO_DEFAULT and not by["x"].has_default and not by["x"].kwonly
    assert by["k"].type == "Int32List" and by["k"].size == 2 and by["k"].default == (1, 1)
    assert by["s"].default is None and not by["s"].kwonly
    assert all(by[n].kwonly for n in ("dtype", "device", "b", "mode", "fl", "d"))
    assert by["b"].default is True and by["mode"].default == "mean"
    assert by["fl"].default == (1.0, 2.5) and by["alpha"].default == -1
    assert by["eps"].default == 1e-5 and by["n"].default == 3
    # converted as an argument would be: Double 2 -> 2.0
    assert by["d"].default == 2.0 and type(by["d"].default) is float
    # describe() shows the yaml text of the default
    assert by["k"].describe() == "Int32List[2] k=1"
    assert sig.describe().startswith("(Tensor x, Int32List[2] k=1, Shape s=None, *, ")


def test_parse_named_tuple_return_and_dtype_defaults():
    sig = parse_signature("TensorTuple[values, indices] (Tensor x, *, DataType dtype=kInt64, "
                          "DataType d2=\"float16\") => Max")
    assert sig.ret == "TensorTuple" and sig.ret_names == ("values", "indices")
    assert sig.params[1].default is flow.int64 and sig.params[2].default is flow.float16


def test_yaml_defaults_none_true_strings_lists_reach_the_functor():
    api, calls = _api('- {name: f, signature: "' + ALL_TYPES.replace('"', '\\"') + '"}', "Rec")
    api.f(X)
    (_, args), = calls
    assert args[0] is X
    assert args[1:] == ((1, 1), None, None, None, None, True, "mean", (1.0, 2.5), None, None,
                        None, None, None, -1, 3, 1e-5, 2.0, 0)


def test_keyword_only_parameters_cannot_be_positional():
    api, _ = _api('- {name: f, signature: "Tensor (Tensor x, *, Bool b=False) => Rec"}', "Rec")
    with pytest.raises(TypeError, match=r"f\(\) takes 1 positional argument but 2"):
        api.f(X, True)


# ---- argument conversion ------------------------------------------------------------------

def test_conversions_of_every_type():
    api, calls = _api('- {name: f, signature: "' + ALL_TYPES + '"}', "Rec")
    gen = flow.Generator()
    pl = flow.placement("cpu", ranks=[0])
    api.f(X, 4, flow.Size([2, 3]), dtype=np.float64, device="cpu", generator=gen, b=np.bool_(0),
          mode="sum", fl=[1, np.float32(0.5)], il=[np.int64(2), 3], p=pl, sbp=flow.sbp.split(0),
          sbps=flow.sbp.broadcast, ts=[X, X], alpha=np.float32(0.5), n=np.int32(7), eps=1,
          d=3, i=np.int8(2))
    (_, a), = calls
    assert a[1] == (4, 4)  # Int32List[2]: a single int is repeated
    assert a[2] == (2, 3) and type(a[2]) is tuple
    assert a[3] is flow.float64
    assert a[4] == flow.device("cpu")
    assert a[5] is gen and a[6] is False and a[7] == "sum"
    assert a[8] == (1.0, 0.5) and all(type(v) is float for v in a[8])
    assert a[9] == (2, 3) and all(type(v) is int for v in a[9])
    assert a[10] is pl and a[11] == flow.sbp.split(0) and a[12] == (flow.sbp.broadcast,)
    assert a[13] == (X, X) and type(a[13]) is tuple
    assert a[14] == 0.5 and type(a[14]) is float  # NumPy scalars become Python numbers
    assert a[15] == 7 and type(a[15]) is int
    assert a[16] == 1.0 and type(a[16]) is float
    assert a[17] == 3.0 and a[18] == 2 and type(a[18]) is int


@pytest.mark.parametrize("kwargs, arg, expected", [
    ({"k": "a"}, "argument 'k' (position 2)", "must be int or tuple of ints, not str"),
    ({"k": [1.5]}, "argument 'k' (position 2)", "must be int or tuple of ints, not list of"),
    ({"k": True}, "argument 'k' (position 2)", "must be int or tuple of ints, not bool"),
    ({"s": 3}, "argument 's' (position 3)", "must be tuple of ints or None, not int"),
    ({"il": 3}, "argument 'il'", "must be tuple of ints or None, not int"),
    ({"fl": 2.0}, "argument 'fl'", "must be tuple of floats, not float"),
    ({"fl": [True]}, "argument 'fl'", "must be tuple of floats, not list of [bool]"),
    ({"dtype": "float32"}, "argument 'dtype'", "must be flow.dtype or None, not str"),
    ({"device": "nonsense"}, "argument 'device'", "must be flow.device or None, not str"),
    ({"generator": 0}, "argument 'generator'", "must be flow.Generator or None, not int"),
    ({"b": 1}, "argument 'b'", "must be bool, not int"),
    ({"mode": None}, "argument 'mode'", "must be str, not NoneType"),
    ({"p": "cpu"}, "argument 'p'", "must be flow.placement or None, not str"),
    ({"sbp": [flow.sbp.broadcast]}, "argument 'sbp'", "must be flow.sbp or None, not list"),
    ({"sbps": []}, "argument 'sbps'", "must be tuple of flow.sbp or None, not list"),
    ({"ts": [X, 1]}, "argument 'ts'", "must be tuple of Tensors or None, not list of"),
    ({"alpha": X}, "argument 'alpha'", "must be Number, not Tensor"),
    ({"alpha": "1"}, "argument 'alpha'", "must be Number, not str"),
    ({"n": 2.0}, "argument 'n'", "must be int, not float"),
    ({"n": False}, "argument 'n'", "must be int, not bool"),
    ({"eps": True}, "argument 'eps'", "must be float, not bool"),
])
def test_bad_argument_messages(kwargs, arg, expected):
    api, calls = _api('- {name: f, signature: "' + ALL_TYPES + '"}', "Rec")
    with pytest.raises(TypeError) as info:
        api.f(X, **kwargs)
    msg = str(info.value)
    assert msg.startswith(f"f(): {arg} ") and expected in msg, msg
    if "position" not in arg:  # keyword-only arguments have no position
        assert "(position" not in msg
    assert calls == []


def test_bad_first_argument_and_python_binding_errors():
    api, _ = _api('- {name: f, signature: "' + ALL_TYPES + '"}', "Rec")
    with pytest.raises(TypeError, match=r"^f\(\): argument 'x' \(position 1\) must be Tensor, "
                                        r"not list of \[float\]$"):
        api.f([1.0])
    with pytest.raises(TypeError, match=r"f\(\) missing 1 required positional argument: 'x'"):
        api.f()
    with pytest.raises(TypeError, match=r"f\(\) got an unexpected keyword argument 'zz'"):
        api.f(X, zz=1)


# ---- overloads --------------------------------------------------------------------------------

OVERLOADS = """
- name: g
  signature: ["Tensor (Tensor x, Tensor y) => TT",
              "Tensor (Tensor x, Scalar y, *, Bool flag=False) => TS",
              "Tensor (Scalar x, Tensor y) => ST",
              "Tensor (Tensor x) => T1"]
"""


def test_overloads_are_tried_in_order():
    api, calls = _api(OVERLOADS, "TT", "TS", "ST", "T1")
    assert api.g(X, X) == "TT"
    assert api.g(X, 2) == "TS" and calls[-1][1] == (X, 2, False)
    assert api.g(X, y=2.5, flag=True) == "TS" and calls[-1][1] == (X, 2.5, True)
    assert api.g(3, X) == "ST"
    assert api.g(x=X) == "T1"
    # a bool is a Scalar, so the first overload that takes it wins
    assert api.g(X, True) == "TS"


def test_first_matching_overload_wins():
    yaml_text = '- {name: h, signature: ["Tensor (Double v) => D", "Tensor (Int64 v) => I"]}'
    api, _ = _api(yaml_text, "D", "I")
    assert api.h(3) == "D"  # an int converts to Double, and Double is listed first
    yaml_text = '- {name: h, signature: ["Tensor (Int64 v) => I", "Tensor (Double v) => D"]}'
    api, _ = _api(yaml_text, "D", "I")
    assert api.h(3) == "I" and api.h(3.0) == "D"


def test_overload_error_lists_every_signature():
    api, calls = _api(OVERLOADS, "TT", "TS", "ST", "T1")
    with pytest.raises(TypeError) as info:
        api.g(X, "s")
    assert str(info.value) == (
        "g() received an invalid combination of arguments - got (Tensor, str), but expected "
        "one of:\n"
        " * (Tensor x, Tensor y)\n"
        " * (Tensor x, Scalar y, *, Bool flag=False)\n"
        " * (Scalar x, Tensor y)\n"
        " * (Tensor x)")
    with pytest.raises(TypeError, match=r"got \(Tensor, y=int, z=int\)"):
        api.g(X, y=1, z=2)
    with pytest.raises(TypeError, match=r"got \(Tensor, Tensor, Tensor\)"):
        api.g(X, X, X)
    with pytest.raises(TypeError, match=r"got \(\)"):
        api.g()
    assert calls == []


def test_builtin_functions_report_torch_style_errors():
    with pytest.raises(TypeError, match=r"add\(\) received an invalid combination of arguments "
                                        r"- got \(Tensor, str\), but expected one of:\n \* "
                                        r"\(Tensor input, Tensor other, \*, Scalar alpha=1"):
        flow._C.add(X, "a")
    # clamp has a Scalar and a Tensor overload (as torch): the overload listing, as torch gives
    with pytest.raises(TypeError, match=r"^clamp\(\) received an invalid combination of "
                                        r"arguments - got \(Tensor, str\)"):
        flow._C.clamp(X, "a")
    with pytest.raises(TypeError, match=r"^cast\(\): argument 'dtype' \(position 2\) must be "
                                        r"flow.dtype, not str$"):
        flow._C.cast(X, "float64")


# ---- malformed yaml -----------------------------------------------------------------------

@pytest.mark.parametrize("yaml_text, pattern", [
    ('- {name: f, signature: "Tensor (Tensr x) => Rec"}',
     r"entry 'f': unknown type 'Tensr' of parameter 'x'"),
    ('- {name: f, signature: "Tensor (Tensor x) Rec"}',
     r"entry 'f': cannot parse signature 'Tensor \(Tensor x\) Rec'; expected"),
    ('- {name: f, signature: "Tensor (Tensor x) => Rec"}\n'
     '- {name: f, signature: "Tensor (Tensor y) => Rec"}',
     r"entry 'f': defined twice"),
    ('- {name: f, signature: "Tensor (Tensor x) => Rec", bind: True}',
     r"entry 'f': unknown key\(s\) \['bind'\]"),
    ('- {name: f, signature: "Tensor (Tensor x, Int64 a=1, Int64 b) => Rec"}',
     r"entry 'f': parameter 'b' without a default follows one with a default"),
    ('- {name: f, signature: "Tensor (Tensor x, Bool b=1) => Rec"}',
     r"entry 'f': default 1 of parameter 'b' is not a valid bool"),
    ('- {name: f, signature: "Tensor (Tensor x, Int64List[2] k=[1, 2.5]) => Rec"}',
     r"entry 'f': default \[1, 2.5\] of parameter 'k' is not a valid int or tuple of ints"),
    ('- {name: f, signature: "Tensor (Tensor x, Int64 n=oops) => Rec"}',
     r"entry 'f': bad default 'oops' for parameter 'n'"),
    ('- {name: f, signature: "Tensor (Tensor x, Tensor x) => Rec"}',
     r"entry 'f': parameter 'x' appears twice"),
    ('- {name: f, signature: "Tensor (Tensor x, *, *, Bool b=False) => Rec"}',
     r"entry 'f': '\*' appears twice"),
    ('- {name: f, signature: "Tensr (Tensor x) => Rec"}', r"entry 'f': unknown return type"),
    ('- {name: f, signature: "Tensor[a, b] (Tensor x) => Rec"}',
     r"entry 'f': only TensorTuple returns can be named"),
    ('- {name: f, signature: "TensorTuple[a, a] (Tensor x) => Rec"}',
     r"entry 'f': return names \['a', 'a'\] must be distinct"),
    ('- {name: f, signature: "Tensor (Tensor[2] x) => Rec"}',
     r"entry 'f': parameter 'x': only .* take a size \[N\], not Tensor"),
    ('- {name: f, signature: "Tensor (Tensor lambda) => Rec"}',
     r"entry 'f': parameter name 'lambda' is a Python keyword"),
    ('- {name: f, signature: "Tensor (Tensor _x) => Rec"}',
     r"entry 'f': parameter name '_x' is a Python keyword or starts with '_'"),
    ('- {name: f, signature: ["Tensor (Tensor x) => Rec", "Tensor (Tensor x) => Rec"]}',
     r"entry 'f': overload \(Tensor x\) is listed twice"),
    ('- {name: f, signature: "Tensor (Tensor x) => Rec", bind_python: "yes"}',
     r"entry 'f': bind_python must be True or False"),
    ('- {name: f, signature: []}', r"entry 'f': signature must be a string or a list"),
    ('- {name: class, signature: "Tensor (Tensor x) => Rec"}', r"entry 'class': name must be"),
    ('- {name: public, signature: "Tensor (Tensor x) => Rec"}', r"entry 'public': name must"),
    ('- {name: f}', r"entry 0: each entry needs 'name' and 'signature'"),
    ('{name: f, signature: "Tensor (Tensor x) => Rec"}', r"expected a list of entries"),
    ('- {name: f, signature: "Tensor (Tensor x) => Rec"', r"invalid yaml"),
])
def test_malformed_yaml_fails_naming_the_entry(yaml_text, pattern):
    with pytest.raises(ApiYamlError, match=pattern):
        load_api(yaml_text, functors={"Rec": lambda *a: None}, name="my.yaml")


def test_malformed_yaml_error_names_the_source():
    with pytest.raises(ApiYamlError, match=r"^my\.yaml entry 'f': "):
        load_api('- {name: f, signature: "Tensor (Tensr x) => Rec"}', name="my.yaml")


def test_unknown_functor_is_a_key_error_naming_entry_and_functor():
    with pytest.raises(KeyError, match=r"entry 'f': signature 'Tensor \(Tensor x\) => Nope' "
                                       r"refers to unknown functor 'Nope'"):
        load_api('- {name: f, signature: "Tensor (Tensor x) => Nope"}')


def test_user_functors_take_precedence_in_their_own_yaml_only():
    api = load_api('- {name: add, signature: "Tensor (Tensor x, Tensor y) => AddAlpha"}',
                   functors={"AddAlpha": lambda x, y: "mine"})
    assert api.add(X, X) == "mine"
    np.testing.assert_allclose(flow._C.add(X, X).numpy(), [2.0, 4.0])
    with pytest.raises(TypeError, match=r"functor 'Mine' must be callable"):
        load_api('- {name: f, signature: "Tensor (Tensor x) => Mine"}', functors={"Mine": 3})


# ---- user yaml -----------------------------------------------------------------------------

USER_YAML = """
- name: "scaled_add"
  signature: "Tensor (Tensor input, Tensor other, *, Scalar alpha=2) => MyScaledAdd"
  bind_python: True
- name: "min_max"
  signature: "TensorTuple[low, high] (Tensor input, Tensor other) => MyMinMax"
  bind_python: True
- name: "scaled_add_grad"
  signature: "Tensor (Tensor dy, Scalar alpha) => MyScaledAddGrad"
"""


def _user_functors():
    def scaled_add(input, other, alpha):
        # a user functor built from existing functions of the library
        return flow._C.add(input, flow._C.mul(other, alpha))

    def min_max(input, other):
        return flow._C.minimum(input, other), flow._C.maximum(input, other)

    return {"MyScaledAdd": scaled_add, "MyMinMax": min_max,
            "MyScaledAddGrad": lambda dy, alpha: flow._C.mul(dy, alpha)}


@pytest.mark.parametrize("from_file", [False, True])
def test_load_user_yaml_with_user_functors(tmp_path, from_file):
    source = USER_YAML
    if from_file:
        source = tmp_path / "my_api.yaml"
        source.write_text(USER_YAML, encoding="utf-8")
    api = load_api(source, functors=_user_functors())
    assert api.public == ["scaled_add", "min_max"]
    assert [e.name for e in api.entries] == ["scaled_add", "min_max", "scaled_add_grad"]
    a, b = np.array([1.0, 5.0], np.float32), np.array([3.0, 2.0], np.float32)
    out = api.scaled_add(flow.tensor(a), flow.tensor(b))
    np.testing.assert_allclose(out.numpy(), a + 2 * b)
    out = api.scaled_add(flow.tensor(a), flow.tensor(b), alpha=0.5)
    np.testing.assert_allclose(out.numpy(), a + 0.5 * b)
    np.testing.assert_allclose(api.scaled_add_grad(flow.tensor(a), 3).numpy(), 3 * a)
    with pytest.raises(TypeError, match=r"^scaled_add\(\): argument 'alpha' must be Number, "
                                        r"not str$"):
        api.scaled_add(flow.tensor(a), flow.tensor(b), alpha="x")
    assert "scaled_add(Tensor input, Tensor other, *, Scalar alpha=2) -> Tensor" in \
        api.scaled_add.__doc__


def test_yaml_file_errors_name_the_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text('- {name: f, signature: "Tensor (Tensor x) => Rec", extra: 1}\n')
    with pytest.raises(ApiYamlError, match=r"broken\.yaml entry 'f': unknown key"):
        load_api(str(path), functors={"Rec": lambda x: x})


def test_named_tuple_returns():
    api = load_api(USER_YAML, functors=_user_functors())
    a, b = flow.tensor([1.0, 5.0]), flow.tensor([3.0, 2.0])
    r = api.min_max(a, b)
    assert isinstance(r, tuple) and r._fields == ("low", "high")
    np.testing.assert_array_equal(r.low.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(r.high.numpy(), [3.0, 5.0])
    low, high = r
    assert low is r[0] and high is r[1]
    assert repr(r).startswith("min_max(low=")


def test_named_tuple_return_of_an_overload():
    yaml_text = ('- {name: mm, signature: ["TensorTuple[values, indices] (Tensor x, Int64 dim) '
                 '=> Two", "Tensor (Tensor x) => One"]}')
    api = load_api(yaml_text, functors={"Two": lambda x, d: (x, x), "One": lambda x: x})
    assert api.mm(X, 0).indices is X and api.mm(X) is X


# ---- flow._C and functional.F --------------------------------------------------------------

def test_flow_C_holds_exactly_the_bind_python_entries():
    public = {e.name for e in F.entries if e.bind_python}
    internal = {e.name for e in F.entries if not e.bind_python}
    assert public and set(flow._C.__all__) == public
    for name in public:
        assert getattr(flow._C, name) is getattr(F, name)
    for name in internal:  # internal functions (e.g. used by backward rules) stay in F only
        assert callable(getattr(F, name)) and not hasattr(flow._C, name)
    # every function of the namespace is generated from its entry
    assert all(getattr(F, e.name)._entry is e for e in F.entries)


def test_internal_entries_are_reachable_but_not_public():
    api = load_api(USER_YAML, functors=_user_functors())
    assert "scaled_add_grad" not in api.public and callable(api.scaled_add_grad)


def test_builtin_function_end_to_end():
    x = flow.tensor([[1.0, -2.0]])
    np.testing.assert_allclose(flow._C.add(x, 1, alpha=2).numpy(), [[3.0, 0.0]])
    np.testing.assert_allclose(flow._C.add(x, x, alpha=2).numpy(), [[3.0, -6.0]])
