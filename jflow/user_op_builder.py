"""OneFlow's user-op builder: run any registered op (built-in or user-defined) by name.

::

    y = (flow.user_op_builder("op_myrelu")   # a name for this op instance (used in errors)
         .Op("myrelu")                        # the op_type_name
         .Input("in", [x])                    # declared input name -> list of tensors
         .Output("out")                       # declared output name (num= for variadic ones)
         .Attr("alpha", 0.1)                  # declared attr name -> value
         .Build()
         .InferAndTryRun()
         .SoleOutputBlob())

The builder exists so OneFlow code (the seeds' ``<name>_py_api.py`` wrappers, the
``flow.config.load_library`` examples) runs unchanged. Every name is checked against the
op's definition as soon as it is given, so a typo fails at the builder call that has it,
naming the op and listing what the op declares. Running it is ``op(*inputs, **attrs)``:
eager, under ``jax.jit`` / ``jax.grad`` / ``jax.vmap`` and on the tape like any call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .ops.attrs import normalize_attr
from .ops.python_op import seed_name
from .ops.registry import OpDef, get
from .tensor import Tensor

__all__ = ["user_op_builder", "UserOpBuilder", "UserOp", "UserOpBuilderError"]

#: OneFlow's attr type names (``Attr(name, value, "AttrTypeFloat")``) -> jflow attr types.
_ONEFLOW_ATTR_TYPES = {
    "AttrTypeInt32": "int32", "AttrTypeInt64": "int64", "AttrTypeBool": "bool",
    "AttrTypeFloat": "float", "AttrTypeDouble": "double", "AttrTypeString": "string",
    "AttrTypeShape": "shape", "AttrTypeDataType": "dtype",
    "AttrTypeListInt32": "int32_list", "AttrTypeListInt64": "int64_list",
    "AttrTypeListFloat": "float_list", "AttrTypeListDataType": "dtype_list",
    "AttrTypeListShape": "shape_list", "AttrTypeListString": "string_list",
}


class UserOpBuilderError(ValueError):
    """A builder call that does not fit the op's definition."""


class UserOpBuilder:
    """Collects op type, inputs, outputs and attrs; :meth:`Build` checks and freezes them."""

    def __init__(self, op_name: str) -> None:
        if not isinstance(op_name, str) or not op_name:
            raise TypeError(f"user_op_builder: the op name must be a non-empty string, got "
                            f"{op_name!r}")
        self.op_name = op_name
        self._op: OpDef | None = None
        self._inputs: dict[str, list[Any]] = {}
        self._outputs: dict[str, int] = {}
        self._attrs: dict[str, Any] = {}

    # -- helpers ----------------------------------------------------------------------------
    def _where(self) -> str:
        op = f"op '{self._op.name}'" if self._op is not None else "no op yet"
        return f"user_op_builder('{self.op_name}') ({op})"

    def _need_op(self, method: str) -> OpDef:
        if self._op is None:
            raise UserOpBuilderError(f"user_op_builder('{self.op_name}').{method}: call "
                                     f".Op(op_type_name) first")
        return self._op

    # -- OneFlow's API ----------------------------------------------------------------------
    def Op(self, op_type_name: str) -> UserOpBuilder:
        """Pick the op by its op_type_name (an unknown name lists close matches)."""
        if self._op is not None:
            raise UserOpBuilderError(f"{self._where()}: .Op() was already called")
        if not isinstance(op_type_name, str):
            raise TypeError(f"user_op_builder('{self.op_name}').Op: op_type_name must be a "
                            f"string, got {type(op_type_name).__name__}")
        try:
            self._op = get(op_type_name)
        except KeyError as e:
            raise UserOpBuilderError(f"user_op_builder('{self.op_name}').Op: {e.args[0]}"
                                     ) from None
        return self

    def Input(self, input_name: str, input_blob_list: Sequence[Any]) -> UserOpBuilder:
        """Bind the declared input ``input_name`` to a list of tensors (one for a plain or
        optional input, any number >= the minimum for a variadic one)."""
        op = self._need_op("Input")
        input_name = seed_name(op.name, "input", input_name)
        spec = next((i for i in op.inputs if i.name == input_name), None)
        if spec is None:
            raise UserOpBuilderError(f"{self._where()}: unknown input '{input_name}'; the op's "
                                     f"inputs are {[i.name for i in op.inputs]}")
        if input_name in self._inputs:
            raise UserOpBuilderError(f"{self._where()}: input '{input_name}' is given twice")
        if isinstance(input_blob_list, Tensor) or not isinstance(input_blob_list, (list, tuple)):
            raise TypeError(f"{self._where()}: .Input('{input_name}', ...) takes a list of "
                            f"tensors (e.g. [x]), got {type(input_blob_list).__name__}")
        bad = [type(t).__name__ for t in input_blob_list if not isinstance(t, Tensor)]
        if bad:
            raise TypeError(f"{self._where()}: input '{input_name}' must be a list of jflow "
                            f"Tensors, got an item of type {bad[0]}")
        n = len(input_blob_list)
        if spec.variadic:
            if n < spec.min:
                raise UserOpBuilderError(f"{self._where()}: input '{input_name}' needs at "
                                         f"least {spec.min} tensors, got {n}")
        elif n != 1:
            raise UserOpBuilderError(f"{self._where()}: input '{input_name}' takes exactly one "
                                     f"tensor, got {n}")
        self._inputs[input_name] = list(input_blob_list)
        return self

    def Output(self, output_name: str, num: int = 1) -> UserOpBuilder:
        """Ask for the declared output ``output_name`` (``num`` tensors for a variadic one;
        checked against the op's inference when it runs)."""
        op = self._need_op("Output")
        output_name = seed_name(op.name, "output", output_name)
        spec = next((o for o in op.outputs if o.name == output_name), None)
        if spec is None:
            raise UserOpBuilderError(f"{self._where()}: unknown output '{output_name}'; the "
                                     f"op's outputs are {[o.name for o in op.outputs]}")
        if output_name in self._outputs:
            raise UserOpBuilderError(f"{self._where()}: output '{output_name}' is given twice")
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise UserOpBuilderError(f"{self._where()}: output '{output_name}': num must be an "
                                     f"int >= 1, got {num!r}")
        if not spec.variadic and num != 1:
            raise UserOpBuilderError(f"{self._where()}: output '{output_name}' is a single "
                                     f"tensor, num must be 1 (got {num})")
        self._outputs[output_name] = num
        return self

    def Attr(self, attr_name: str, attr_value: Any,
             attr_type_name: str | None = None) -> UserOpBuilder:
        """Set the declared attr ``attr_name``. OneFlow's optional ``attr_type_name``
        ("AttrTypeFloat", ... or a jflow type "float") must match the declared type."""
        op = self._need_op("Attr")
        spec = next((a for a in op.attrs if a.name == attr_name), None)
        if spec is None:
            raise UserOpBuilderError(f"{self._where()}: unknown attr '{attr_name}'; the op's "
                                     f"attrs are {[a.name for a in op.attrs]}")
        if attr_type_name is not None:
            t = _ONEFLOW_ATTR_TYPES.get(attr_type_name, attr_type_name)
            if t != spec.type:
                raise UserOpBuilderError(f"{self._where()}: attr '{attr_name}' is declared "
                                         f"{spec.type}, the builder says {attr_type_name}")
        try:  # the type now, so the error points at this call; the op's check fn at Build()
            normalize_attr(spec.type, attr_value, spec.default is None)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{self._where()}: attr '{attr_name}' ({spec.type}): {e}") from None
        self._attrs[attr_name] = attr_value
        return self

    def Build(self) -> UserOp:
        """Check that required inputs are bound and run the op's attr normalisation and check
        fn (errors name the op); return the runnable :class:`UserOp`."""
        op = self._need_op("Build")
        missing = [i.name for i in op.inputs if not i.optional and i.name not in self._inputs]
        if missing:
            raise UserOpBuilderError(f"{self._where()}: missing input(s) {missing}; call "
                                     f".Input(name, [tensor]) for each")
        attrs = op.normalize_attrs(dict(self._attrs))  # errors name the op and the attr
        outputs = dict(self._outputs)
        if not outputs:
            raise UserOpBuilderError(f"{self._where()}: no output requested; call .Output(name)"
                                     f" (the op's outputs are {[o.name for o in op.outputs]})")
        structured = []
        for spec in op.inputs:
            ts = self._inputs.get(spec.name)
            if spec.variadic:
                structured.append(list(ts or []))
            else:
                structured.append(None if ts is None else ts[0])
        return UserOp(self.op_name, op, structured, attrs, outputs)


class UserOp:
    """A built op instance: :meth:`InferAndTryRun` runs it, then read its outputs."""

    def __init__(self, op_name: str, op: OpDef, inputs: list[Any], attrs: dict[str, Any],
                 outputs: dict[str, int]) -> None:
        self.op_name = op_name
        self.op = op
        self._inputs = inputs
        self.attrs = attrs
        self._requested = outputs
        self._results: dict[str, list[Any]] | None = None

    def __repr__(self) -> str:
        ran = "ran" if self._results is not None else "not run"
        return f"<UserOp '{self.op_name}' of op {self.op.signature()} ({ran})>"

    def _where(self) -> str:
        return f"user_op_builder('{self.op_name}') (op '{self.op.name}')"

    def InferAndTryRun(self) -> UserOp:
        """Run the op (eagerly, or staged when the inputs are traced)."""
        op = self.op
        res = op(*self._inputs, **self.attrs)
        flat = list(res) if isinstance(res, (tuple, list)) else [res]
        n_var = len(flat) - sum(not o.variadic for o in op.outputs)
        per: dict[str, list[Any]] = {}
        i = 0
        for spec in op.outputs:
            n = n_var if spec.variadic else 1
            per[spec.name] = flat[i:i + n]
            i += n
        for name, num in self._requested.items():
            got = len(per[name])
            if got != num:
                raise UserOpBuilderError(f"{self._where()}: output '{name}' has {got} tensors, "
                                         f"the builder asked for num={num}")
        self._results = per
        return self

    def _run_if_needed(self) -> dict[str, list[Any]]:
        if self._results is None:
            self.InferAndTryRun()
        assert self._results is not None
        return self._results

    def RemoteBlobList(self) -> list[Any]:
        """The requested outputs (in the order they were requested, a variadic one
        expanded), as a list of tensors."""
        res = self._run_if_needed()
        return [t for name in self._requested for t in res[name]]

    def SoleOutputBlob(self) -> Any:
        """The one requested output tensor (an error if the builder asked for more)."""
        blobs = self.RemoteBlobList()
        if len(blobs) != 1:
            asked = ", ".join(f"'{k}' x{v}" for k, v in self._requested.items())
            raise UserOpBuilderError(
                f"{self._where()}: SoleOutputBlob() needs exactly one output, the builder "
                f"requested {len(blobs)} ({asked}); use RemoteBlobList()")
        return blobs[0]

    def OutputBlobs(self, output_name: str) -> list[Any]:
        """The tensors of one requested output."""
        res = self._run_if_needed()
        output_name = seed_name(self.op.name, "output", output_name)
        if output_name not in self._requested:
            raise UserOpBuilderError(f"{self._where()}: output '{output_name}' was not "
                                     f"requested; requested: {list(self._requested)}")
        return list(res[output_name])


def user_op_builder(op_name: str) -> UserOpBuilder:
    """``flow.user_op_builder(op_name)``: start building a call of a registered op."""
    return UserOpBuilder(op_name)
