"""``torch._dynamo.config``: Dynamo's settings, readable and writable so programs that tune
them run; jflow's compiler reads none of them (it traces with JAX, once per input signature)."""

cache_size_limit = 8
accumulated_cache_size_limit = 256
suppress_errors = False
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
optimize_ddp = True
inline_inbuilt_nn_modules = True
recompile_limit = 8
