"""float32 matmul speed on a GPU at each precision, plain JAX and PyTorch (a calibration for
benchmarks/gpu_models.py): (8192, 768) @ (768, 3072), a GPT MLP's product."""
import time

import jax
import jax.numpy as jnp
import torch

M, K, N = 8192, 768, 3072
a, b = jnp.ones((M, K), jnp.float32), jnp.ones((K, N), jnp.float32)


def timed(f, n=50):
    f()
    t = time.perf_counter()
    for _ in range(n):
        r = f()
    if hasattr(r, "block_until_ready"):
        r.block_until_ready()
    else:
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / n


for p in ("highest", "high", "default"):
    f = jax.jit(lambda x, y, p=p: jnp.matmul(x, y, precision=p))
    dt = timed(lambda f=f: f(a, b))
    print(f"jax precision={p:8s} {dt * 1e3:7.3f} ms  {2 * M * K * N / dt / 1e12:6.1f} TFLOP/s")
ta, tb = torch.ones(M, K, device="cuda"), torch.ones(K, N, device="cuda")
for p in ("highest", "high"):
    torch.set_float32_matmul_precision(p)
    dt = timed(lambda: ta @ tb)
    print(f"torch precision={p:8s} {dt * 1e3:7.3f} ms  {2 * M * K * N / dt / 1e12:6.1f} TFLOP/s")
