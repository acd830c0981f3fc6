import timeit, numpy as np, jflow as flow
x = flow.tensor(np.ones(16, np.float32), requires_grad=True)
x0 = flow.tensor(np.ones(16, np.float32))
c = flow.tensor(np.ones(16, np.float32))
mul = flow.ops.get("mul").apply
tanh = flow.ops.get("tanh").apply
for name, f in [("mul nograd", lambda: mul(x0, c)), ("mul grad", lambda: mul(x, c)),
                ("tanh nograd", lambda: tanh(x0)), ("tanh grad", lambda: tanh(x)),
                ("x*c grad", lambda: x * c), ("x*2.0 grad", lambda: x * 2.0)]:
    print(name, min(timeit.repeat(f, number=3000, repeat=5)) / 3000 * 1e6)
