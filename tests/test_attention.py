"""scaled_dot_product_attention (functor level) and the transformer modules.

The op itself (NumPy reference, jit, vmap, gradients of both ops, SBP) is covered by the op
checker (jflow/testing/op_samples/attention.py). Here: PyTorch parity of the functional and of
MultiheadAttention / TransformerEncoderLayer / TransformerEncoder with a torch state dict
loaded into jflow, gradients, fully masked rows, second order, jax.jit.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jflow as flow
from jflow import nn
from jflow.nn import functional as F

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(5)


def _r(*shape, dtype=np.float64):
    return _rng.standard_normal(shape).astype(dtype)


def _j(a, grad=False):
    t = flow.tensor(a)
    return t.requires_grad_() if grad else t


def _t(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


# -- functional ------------------------------------------------------------------------------------

_Q, _K, _V = _r(2, 3, 4, 5), _r(2, 1, 6, 5), _r(1, 3, 6, 7)      # leading dims broadcast


@pytest.mark.parametrize("case", ["plain", "causal", "bool", "float", "scale"])
def test_sdpa_matches_torch_with_grads(case):
    kw_j, kw_t = {}, {}
    mask = None
    if case == "causal":
        kw_j["is_causal"] = kw_t["is_causal"] = True
    elif case == "bool":
        mask = _rng.random((2, 1, 4, 6)) > 0.3
        mask[..., 0] = True                                   # no fully masked row
        kw_j["attn_mask"], kw_t["attn_mask"] = _j(mask), _t(mask)
    elif case == "float":
        mask = _r(4, 6)
        kw_j["attn_mask"], kw_t["attn_mask"] = _j(mask, True), _t(mask, True)
    elif case == "scale":
        kw_j["scale"] = kw_t["scale"] = 0.3
    qj, kj, vj = _j(_Q, True), _j(_K, True), _j(_V, True)
    qt, kt, vt = _t(_Q, True), _t(_K, True), _t(_V, True)
    out = F.scaled_dot_product_attention(qj, kj, vj, **kw_j)
    ref = torch.nn.functional.scaled_dot_product_attention(
        qt, kt.expand(2, 3, 6, 5), vt.expand(2, 3, 6, 7), **kw_t)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = _r(*ref.shape)
    out.backward(_j(g))
    ref.backward(_t(g))
    for a, b in ((qj, qt), (kj, kt), (vj, vt)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11)
    if case == "float":
        np.testing.assert_allclose(kw_j["attn_mask"].grad.numpy(),
                                   kw_t["attn_mask"].grad.numpy(), rtol=1e-9, atol=1e-11)


def test_sdpa_second_order_matches_torch():
    mask = _r(1, 4, 6)
    ins_j = [_j(a, True) for a in (_Q[:1], _K[:1], _V[:1], mask)]
    ins_t = [_t(a, True) for a in (_Q[:1], _K[:1], _V[:1], mask)]
    res = []
    for ins, fn, grad in ((ins_j, F.scaled_dot_product_attention, flow.autograd.grad),
                          (ins_t, torch.nn.functional.scaled_dot_product_attention,
                           torch.autograd.grad)):
        q, k, v, m = ins
        kv = (k, v) if ins is ins_j else (k.expand(1, 3, 6, 5), v.expand(1, 3, 6, 7))
        out = fn(q, *kv, attn_mask=m)
        gq, gk, gv = grad((out * out).sum(), [q, k, v], create_graph=True)
        s = (gq * gq).sum() + (gk * gk).sum() + (gv * gv).sum()
        res.append([np.asarray(x.detach().numpy()) for x in grad(s, [q, k, v, m])])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def test_sdpa_fully_masked_row_gives_zeros():
    mask = np.ones((4, 6), bool)
    mask[2] = False
    q, k, v = _j(_Q, True), _j(_K, True), _j(_V, True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=_j(mask))
    o = out.detach().numpy()
    assert np.all(o[..., 2, :] == 0) and np.all(np.isfinite(o))
    out.sum().backward()
    for t in (q, k, v):
        assert np.all(np.isfinite(t.grad.numpy()))
    assert np.all(q.grad.numpy()[..., 2, :] == 0)
    # the composite (dropout) path agrees
    flow.manual_seed(0)
    o2 = F.scaled_dot_product_attention(_j(_Q), _j(_K), _j(_V), attn_mask=_j(mask),
                                        dropout_p=1e-12)
    np.testing.assert_allclose(o2.numpy(), o, rtol=1e-9, atol=1e-12)
    # a float mask of -inf is fully masked too
    fm = np.where(mask, 0.0, -np.inf)
    o3 = F.scaled_dot_product_attention(_j(_Q), _j(_K), _j(_V), attn_mask=_j(fm))
    np.testing.assert_allclose(o3.numpy(), o, rtol=1e-12, atol=0)


def test_sdpa_dropout_uses_the_generator():
    q, k, v = (_j(a) for a in (_Q, _K, _V))
    flow.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    flow.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    c = F.scaled_dot_product_attention(q, k, v)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(a.numpy(), c.numpy())
    qg = _j(_Q, True)
    F.scaled_dot_product_attention(qg, _j(_K), _j(_V), dropout_p=0.5).sum().backward()
    assert qg.grad is not None and np.all(np.isfinite(qg.grad.numpy()))


def test_sdpa_low_precision_and_errors():
    q, k, v = (a.astype(np.float32) for a in (_Q, _K, _V))
    ref = F.scaled_dot_product_attention(_j(q), _j(k), _j(v), is_causal=True).numpy()
    for dt in (flow.bfloat16, flow.float16):
        out = F.scaled_dot_product_attention(_j(q).to(dt), _j(k).to(dt), _j(v).to(dt),
                                             is_causal=True)
        assert out.dtype == dt
        np.testing.assert_allclose(out.float().numpy(), ref, rtol=5e-2, atol=5e-2)
    with pytest.raises(ValueError, match="enable_gqa=True needs the query heads"):
        F.scaled_dot_product_attention(_j(q), _j(k), _j(v), enable_gqa=True)
    with pytest.raises(TypeError, match="same dtype"):
        F.scaled_dot_product_attention(_j(q), _j(k).double(), _j(v))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        F.scaled_dot_product_attention(_j(q), _j(_r(3, 3, 6, 5, dtype=np.float32)), _j(v))
    with pytest.raises(ValueError, match="scaled_dot_product_attention.*attn_mask"):
        F.scaled_dot_product_attention(_j(q), _j(k), _j(v), attn_mask=_j(np.ones((5, 6), bool)))
    with pytest.raises(ValueError, match="key's last dim"):
        F.scaled_dot_product_attention(_j(q), _j(_r(2, 1, 6, 4, dtype=np.float32)), _j(v))


def test_sdpa_under_jax_jit_and_grad():
    q, k, v = (a.astype(np.float32) for a in (_Q[:1], _K[:1], _V[:1]))

    def f(qa, ka, va):
        return F.scaled_dot_product_attention(_w(qa), _w(ka), _w(va), is_causal=True)._value

    eager = F.scaled_dot_product_attention(_j(q), _j(k), _j(v), is_causal=True).numpy()
    np.testing.assert_allclose(np.asarray(jax.jit(f)(q, k, v)), eager, rtol=1e-6, atol=1e-6)
    g = jax.jit(jax.grad(lambda qa: f(qa, k, v).sum()))(q)
    qt = _j(q, True)
    F.scaled_dot_product_attention(qt, _j(k), _j(v), is_causal=True).sum().backward()
    np.testing.assert_allclose(np.asarray(g), qt.grad.numpy(), rtol=1e-5, atol=1e-6)


def _w(a):
    from jflow.tensor import _wrap
    return _wrap(a)


# -- modules ---------------------------------------------------------------------------------------

def _load(jmod, tmod, assign=False):
    """Copy a torch module's state dict into the jflow module (through NumPy); ``assign``
    (a module built on the meta device) takes torch's values as the parameters."""
    sd = {k: flow.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()}
    jmod.load_state_dict(sd, assign=assign)
    assert all(not p.is_meta and p.requires_grad for p in jmod.parameters())


# The jflow twins are built on the meta device (float64) and take torch's values by
# load_state_dict(assign=True): jflow's own random initialisation would compile draws and
# casts per parameter shape only to be overwritten (default initialisation:
# test_mha_init_as_pytorch).
def _pair_mha(**kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(**kw).double().eval()
    jm = nn.MultiheadAttention(**kw, device="meta", dtype=flow.float64).eval()
    assert set(jm.state_dict()) == set(tm.state_dict())
    for k, v in tm.state_dict().items():
        assert tuple(jm.state_dict()[k].shape) == tuple(v.shape), k
    _load(jm, tm, assign=True)
    return jm, tm


def test_mha_init_as_pytorch():
    m = nn.MultiheadAttention(8, 2)
    assert np.all(m.in_proj_bias.detach().numpy() == 0)
    assert np.all(m.out_proj.bias.detach().numpy() == 0)
    bound = np.sqrt(6.0 / (8 + 24))                       # xavier_uniform on (3E, E)
    w = m.in_proj_weight.detach().numpy()
    assert w.shape == (24, 8) and np.abs(w).max() <= bound and np.abs(w).max() > bound / 2
    m2 = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False)
    assert m2.in_proj_weight is None and m2.in_proj_bias is None
    assert tuple(m2.k_proj_weight.shape) == (8, 3) and tuple(m2.v_proj_weight.shape) == (8, 5)
    m3 = nn.MultiheadAttention(8, 2, add_bias_kv=True)     # bias_k / bias_v: (1, 1, E)
    assert tuple(m3.bias_k.shape) == (1, 1, 8) and tuple(m3.bias_v.shape) == (1, 1, 8)
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(8, 3)


@pytest.mark.parametrize("batch_first", [True, False])
def test_mha_matches_torch(batch_first):
    n, n_l, n_s, e = 2, 3, 5, 8
    jm, tm = _pair_mha(embed_dim=e, num_heads=2, batch_first=batch_first, dropout=0.1)
    shp = (lambda a, b: (n, a, b)) if batch_first else (lambda a, b: (a, n, b))
    q, k, v = _r(*shp(n_l, e)), _r(*shp(n_s, e)), _r(*shp(n_s, e))
    kpm = np.zeros((n, n_s), bool)
    kpm[0, -2:] = True
    am = _r(n_l, n_s)
    am3 = _rng.random((n * 2, n_l, n_s)) > 0.6
    am3[..., 0] = False                                    # torch: True = masked
    cases = [dict(), dict(key_padding_mask="kpm"), dict(attn_mask="am"), dict(attn_mask="am3"),
             dict(key_padding_mask="kpm", attn_mask="am", average_attn_weights=False),
             dict(key_padding_mask="kpm", attn_mask="am3"),
             dict(need_weights=False, key_padding_mask="kpm")]
    for case in cases:
        kj, kt = {}, {}
        for name, val in case.items():
            arr = {"kpm": kpm, "am": am, "am3": am3}.get(val) if isinstance(val, str) else None
            kj[name] = _j(arr) if arr is not None else val
            kt[name] = _t(arr) if arr is not None else val
        oj, wj = jm(_j(q), _j(k), _j(v), **kj)
        ot, wt = tm(_t(q), _t(k), _t(v), **kt)
        np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-9, atol=1e-11)
        if wt is None:
            assert wj is None
        else:
            np.testing.assert_allclose(wj.detach().numpy(), wt.detach().numpy(), rtol=1e-9,
                                       atol=1e-11)


def test_mha_causal_kdim_unbatched_and_grads():
    e = 8
    jm, tm = _pair_mha(embed_dim=e, num_heads=4, kdim=3, vdim=5, batch_first=True)
    q, k, v = _r(2, 4, e), _r(2, 4, 3), _r(2, 4, 5)
    causal = np.triu(np.ones((4, 4), bool), 1)             # torch: True = masked
    oj, _ = jm(_j(q), _j(k), _j(v), attn_mask=_j(causal), is_causal=True, need_weights=False)
    ot, _ = tm(_t(q), _t(k), _t(v), attn_mask=_t(causal), is_causal=True, need_weights=False)
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-9, atol=1e-11)
    g = _r(*ot.shape)
    oj.backward(_j(g))
    ot.backward(_t(g))
    tgrads = dict(tm.named_parameters())
    for name, p in jm.named_parameters():
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), tgrads[name].grad.numpy(), rtol=1e-8,
                                   atol=1e-10, err_msg=name)
    # the causal hint with weights (the materialised path)
    oj, wj = jm(_j(q), _j(k), _j(v), attn_mask=_j(causal), is_causal=True)
    ot, wt = tm(_t(q), _t(k), _t(v), attn_mask=_t(causal), is_causal=True)
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(wj.detach().numpy(), wt.detach().numpy(), rtol=1e-9, atol=1e-11)
    # unbatched (L, E) input
    oj, wj = jm(_j(q[0]), _j(k[0]), _j(v[0]))
    ot, wt = tm(_t(q[0]), _t(k[0]), _t(v[0]))
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(wj.detach().numpy(), wt.detach().numpy(), rtol=1e-9, atol=1e-11)


def _pair_layer(**kw):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(**kw).double().eval()
    jl = nn.TransformerEncoderLayer(**kw, device="meta", dtype=flow.float64).eval()
    assert set(jl.state_dict()) == set(tl.state_dict())
    _load(jl, tl, assign=True)
    return jl, tl


@pytest.mark.parametrize("batch_first,norm_first,activation",
                         [(True, False, "relu"), (False, True, "gelu")])
def test_encoder_layer_matches_torch(batch_first, norm_first, activation):
    jl, tl = _pair_layer(d_model=8, nhead=2, dim_feedforward=16, batch_first=batch_first,
                         norm_first=norm_first, activation=activation)
    x = _r(2, 5, 8) if batch_first else _r(5, 2, 8)
    kpm = np.zeros((2, 5), bool)
    kpm[1, -1] = True
    causal = np.triu(np.ones((5, 5), bool), 1)
    for kj, kt in (({}, {}),
                   ({"src_key_padding_mask": _j(kpm)}, {"src_key_padding_mask": _t(kpm)}),
                   ({"src_mask": _j(causal), "is_causal": True},
                    {"src_mask": _t(causal), "is_causal": True})):
        oj = jl(_j(x), **kj)
        with torch.no_grad():
            ot = tl(_t(x), **kt)
        np.testing.assert_allclose(oj.detach().numpy(), ot.numpy(), rtol=1e-9, atol=1e-10)
    # gradients reach every parameter and agree with torch
    jl.train()
    tl.train()
    for m in (jl, tl):
        for mod in m.modules():
            if hasattr(mod, "p"):
                mod.p = 0.0                                  # dropout off, training mode
        m.self_attn.dropout = 0.0
    oj = jl(_j(x), src_key_padding_mask=_j(kpm))
    ot = tl(_t(x), src_key_padding_mask=_t(kpm))
    (oj * oj).sum().backward()
    (ot * ot).sum().backward()
    tgrads = dict(tl.named_parameters())
    for name, p in jl.named_parameters():
        assert p.grad is not None, name
        np.testing.assert_allclose(p.grad.numpy(), tgrads[name].grad.numpy(), rtol=1e-7,
                                   atol=1e-9, err_msg=name)


def test_encoder_stack_matches_torch_and_jits():
    jl, tl = _pair_layer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    torch.manual_seed(1)
    tenc = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8),
                                       enable_nested_tensor=False).double().eval()
    jenc = nn.TransformerEncoder(jl, 2, norm=nn.LayerNorm(8)).to(flow.float64).eval()
    assert set(jenc.state_dict()) == set(tenc.state_dict())
    _load(jenc, tenc)
    x = _r(2, 5, 8)  # test_encoder_layer_matches_torch's shapes: its eager programs are reused
    causal = np.triu(np.ones((5, 5), bool), 1)
    with torch.no_grad():
        ot = tenc(_t(x), mask=_t(causal), is_causal=True)
    oj = jenc(_j(x), mask=_j(causal), is_causal=True)
    np.testing.assert_allclose(oj.detach().numpy(), ot.numpy(), rtol=1e-9, atol=1e-10)
    # compiled: flow.jit of a function of the module (a training step's forward + backward),
    # and plain jax.jit of a function of arrays that closes over the module
    jenc.train()

    @flow.jit
    def step(m, a):
        out = m(a, is_causal=True)
        loss = (out * out).mean()
        loss.backward()
        return loss

    for mod in jenc.modules():
        if hasattr(mod, "p"):
            mod.p = 0.0
        if isinstance(mod, nn.MultiheadAttention):
            mod.dropout = 0.0
    loss = step(jenc, _j(x))
    grads = {n: p.grad.numpy() for n, p in jenc.named_parameters()}
    assert all(np.all(np.isfinite(g)) for g in grads.values()) and len(grads) == 26
    for p in jenc.parameters():
        p.grad = None
    (jenc(_j(x), is_causal=True) ** 2).mean().backward()
    for n, p in jenc.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), grads[n], rtol=1e-8, atol=1e-10, err_msg=n)
    np.testing.assert_allclose(float(loss.numpy()), float((oj * oj).mean().detach().numpy()),
                               rtol=1e-9)
    jenc.eval()
    jitted = jax.jit(lambda a: jenc(_w(a), mask=_j(causal))._value)(x)
    np.testing.assert_allclose(np.asarray(jitted), oj.detach().numpy(), rtol=1e-9, atol=1e-10)
