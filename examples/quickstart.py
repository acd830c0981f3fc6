"""jflow quickstart: tensors, eager ops, the functional API, jax.jit, autograd, global tensors
and training a tiny model eagerly and compiled — checked as it goes.

    python examples/quickstart.py
"""

import jax

jax.config.update("jax_num_cpu_devices", 8)  # 8 virtual CPU devices for global tensors

import numpy as np  # noqa: E402

import jflow as flow  # noqa: E402

# -- tensors --------------------------------------------------------------------------------
x = flow.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]])
print("x =", x)
print("shape", x.shape, "dtype", x.dtype, "device", x.device)
assert x.shape == (2, 3) and x.dtype == flow.float32

i = flow.arange(6)
assert i.dtype == flow.int64  # PyTorch's defaults: float32 and int64
flow.manual_seed(0)
r1 = flow.randn(2, 3)
flow.manual_seed(0)
assert np.array_equal(r1.numpy(), flow.randn(2, 3).numpy())  # same seed, same numbers

# -- eager ops, PyTorch promotion ----------------------------------------------------------
y = x * 2 + 1
print("x * 2 + 1 =", y)
assert np.allclose(y.numpy(), x.numpy() * 2 + 1)
z = flow.tensor([1, 2, 3]) / 2  # int tensor / int scalar -> float32, as in PyTorch
print("int / 2 =", z)
assert z.dtype == flow.float32
assert np.allclose(flow.exp(x).numpy(), np.exp(x.numpy()), rtol=1e-6)

# -- the functional API generated from api.yaml -------------------------------------------
lr = flow._C.leaky_relu(x, 0.2)
print("flow._C.leaky_relu(x, 0.2) =", lr)
assert np.allclose(lr.numpy(), np.where(x.numpy() > 0, x.numpy(), 0.2 * x.numpy()))
try:
    flow._C.leaky_relu(x, "0.2")
except TypeError as e:
    print("bad call ->", e)

# -- a function of jflow ops under jax.jit (Tensors are pytrees) ---------------------------


@jax.jit
def step(t: flow.Tensor) -> flow.Tensor:
    return flow.tanh(flow._C.leaky_relu(t, 0.1) * 0.5) + 1


out = step(x)
print("jax.jit(step)(x) =", out)
want = np.tanh(np.where(x.numpy() > 0, x.numpy(), 0.1 * x.numpy()) * 0.5) + 1
assert isinstance(out, flow.Tensor) and np.allclose(out.numpy(), want, rtol=1e-6)
print(jax.make_jaxpr(lambda t: step(t))(x))

# -- autograd: one backward rule per op, for the tape and for JAX ---------------------------
w = flow.tensor([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]], requires_grad=True)
loss = (w * x).tanh().sum()
loss.backward()  # the eager tape
t = np.tanh(w.detach().numpy() * x.numpy())
print("d loss / d w =", w.grad)
# float32: 1 - tanh^2 cancels, so compare loosely
assert np.allclose(w.grad.numpy(), (1 - t ** 2) * x.numpy(), rtol=1e-4, atol=1e-5)


def f(a: flow.Tensor) -> flow.Tensor:  # the same rules serve JAX's transforms (flow.func)
    return flow.tanh(a * x).sum()


w0 = w.detach()
assert np.allclose(flow.func.grad(f)(w0).numpy(), w.grad.numpy(), rtol=1e-4, atol=1e-5)
print("hessian diagonal:", np.diag(flow.func.hessian(f)(w0).numpy().reshape(6, 6)))

# -- global tensors: placement + SBP on jax.sharding ----------------------------------------
p = flow.placement("cpu", ranks=list(range(8)))
data = flow.randn(16, 3, placement=p, sbp=flow.sbp.split(0))  # rows spread over 8 devices
weight = w.detach().to_global(p, flow.sbp.broadcast)
h = (data @ weight.transpose(0, 1)).tanh()  # (S(0), B) -> S(0): no communication
print("global:", h.sbp, "logical shape", tuple(h.shape), "local shard", tuple(h.to_local().shape))
assert np.allclose(h.numpy(), np.tanh(data.numpy() @ weight.numpy().T), rtol=1e-5)
print(flow.sharding.explain(lambda a, b: (a @ b.transpose(0, 1)).sum(), data, weight))

# -- a tiny model, trained eagerly and then as one compiled step (nn.Graph) ---------------
nn, F = flow.nn, flow.nn.functional
rs = np.random.RandomState(0)
xs = flow.tensor(rs.randn(64, 2).astype(np.float32))
ys = flow.tensor((xs.numpy()[:, 0] * xs.numpy()[:, 1] > 0).astype(np.int64))  # XOR-like


def make() -> tuple:
    flow.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
    return m, flow.optim.Adam(m.parameters(), lr=0.05)


model, opt = make()
for _ in range(60):  # eager: every op dispatched as it runs, the tape records the backward
    opt.zero_grad()
    loss = F.cross_entropy(model(xs), ys)
    loss.backward()
    opt.step()
eager_loss = float(loss)


class TrainStep(nn.Graph):  # compiled: forward, backward and Adam step in one jax.jit
    def __init__(self, model: nn.Module, opt: flow.optim.Optimizer) -> None:
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x: flow.Tensor, y: flow.Tensor) -> flow.Tensor:
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


model2, opt2 = make()
step = TrainStep(model2, opt2)
for _ in range(60):
    loss2 = step(xs, ys)  # parameters and Adam state are written back into model2 / opt2
print(f"tiny model: eager loss {eager_loss:.4f}, compiled loss {float(loss2):.4f}, "
      f"{step.trace_count} traces")
assert eager_loss < 0.35 and abs(eager_loss - float(loss2)) < 1e-4
acc = (model2(xs).argmax(1) == ys).float().mean()  # eager use of the compiled-trained model
assert float(acc) > 0.9

# -- every op is a registered JAX primitive -------------------------------------------------
print(flow.ops.get("leaky_relu").signature())
print(len(flow.ops.list_ops()), "ops registered")
print("quickstart OK")
