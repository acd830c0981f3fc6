import sys; sys.path.insert(0,'benchmarks')
import eager_backward as eb, time, numpy as np
import jflow as flow
x = flow.tensor(np.ones(16, np.float32), requires_grad=True)
c = flow.tensor(np.ones(16, np.float32))
x0 = flow.tensor(np.ones(16, np.float32))
def fwd(): eb.chain(x, c)
def fwd_nograd(): eb.chain(x0, c)
print("fwd rec", eb.bench(fwd, 300, 5))
print("fwd nograd", eb.bench(fwd_nograd, 300, 5))
def both():
    x.grad=None; eb.chain(x, c).backward()
print("both", eb.bench(both, 300, 5))
import cProfile, pstats
cProfile.run("for _ in range(300): both()", "/tmp/prof")
p = pstats.Stats("/tmp/prof"); p.sort_stats("tottime").print_stats(25)
