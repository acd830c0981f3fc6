"""PyTorch's checkpoint format (what ``torch.save`` writes since PyTorch 1.6), read and written
without PyTorch.

On disk it is a zip whose entries share one top-level folder (``archive/`` here; PyTorch
names it after the file)::

    archive/data.pkl               the object, pickled; each tensor is a call to
                                   torch._utils._rebuild_tensor_v2(storage, offset, size,
                                   stride, requires_grad, hooks) whose storage is a
                                   persistent id ("storage", torch.FloatStorage, key,
                                   location, numel)
    archive/byteorder              "little" or "big"
    archive/data/<key>             one storage's raw bytes
    archive/version                the format version ("3")

Reading (:func:`load`). ``weights_only=True`` (PyTorch 2.6+'s default, and jflow's) unpickles
with :class:`_WeightsOnlyUnpickler`: a ``pickle`` unpickler whose ``find_class`` resolves only
the tensor-rebuilding functions, storage types, dtypes, ``torch.Size``, ``torch.device``,
``collections.OrderedDict``, ``set``, ``complex``, bytes helpers and the globals the user
allowed (:func:`jflow.serialization.add_safe_globals`), whose ``persistent_load`` resolves
only storage records, and which calls nothing else: a REDUCE / NEWOBJ may call only what
``find_class`` returned for an allowed callable, and a BUILD (setting an object's state) is
allowed only on an ``OrderedDict`` or an instance of an allowed class; the instance opcodes
of protocols 0-1 and the copyreg extension registry are refused. Any other global raises
:class:`SerializationError` naming it; nothing it names is imported or called.
(The unpickler is ``pickle``'s Python implementation, ``pickle._Unpickler``, subclassed:
``pickle.Unpickler``'s C implementation cannot restrict BUILD, through which a pickle could
otherwise set attributes on a shared object such as a dtype.)

``weights_only=False`` is the explicit opt-in to load whole objects (modules ...): a full
unpickler that maps PyTorch's globals onto jflow's (``torch.nn.modules.linear.Linear`` ->
``jflow.nn.modules.linear.Linear``, ``torch.float32`` -> ``flow.float32`` ...) and imports any
other global the file names, running its code, as ``pickle`` does.

Tensors come back as jflow tensors holding their values (jflow has no storages): each view
is materialized, views of one storage with the same offset, size and stride share one array
(tied weights are read once), and aliasing between different views is not kept. Every
storage record is checked against its zip header before it is read (its size must be the
declared element count times the itemsize: a declared storage larger than the file is
refused before anything is allocated), and every view against its storage's bounds.

Writing (:func:`write`). A pickler (``pickle._Pickler``, for the same control) names every
jflow tensor as PyTorch does: ``torch._utils._rebuild_tensor_v2`` over a ``torch.FloatStorage``
style storage, an ``nn.Parameter`` via ``torch._utils._rebuild_parameter``, dtypes as
``torch.float32``, ``flow.Size`` as ``torch.Size`` and devices as ``torch.device``, so real
PyTorch loads a state dict with ``weights_only=True``. Everything else pickles as ``pickle``
would pickle it, under its own name: a jflow module is ``jflow.nn.modules.linear.Linear``
(jflow's modules are not PyTorch's classes: their attributes differ, so naming them
``torch.nn...`` would make PyTorch build broken modules); only jflow loads whole-module files.
Storages are written stored, 64-byte aligned, as ``torch.save`` does.
"""

from __future__ import annotations

import _compat_pickle
import io
import math
import os
import pickle
import secrets
import struct
import sys
import zipfile
from collections import OrderedDict
from typing import IO, Any

import numpy as np

from .. import dtypes as _dt
from .. import nn
from ..device import device as _Device
from ..nn.modules.module import Module, _Store
from ..nn.parameter import Parameter
from ..tensor import Size, Tensor, _wrap
from ._common import (
    MAX_EXPANSION_BYTES,
    MAX_NDIM,
    MAX_PICKLE_BYTES,
    SerializationError,
    corrupted,
    short,
    to_tensor,
)
from ._zipformat import _Archive

ARCHIVE = "archive"
#: The format version torch.save writes and the newest this reader knows.
VERSION = 3
_MAX_VERSION = 10

#: PyTorch's legacy typed storage classes -> dtype (``torch.cuda.*`` too).
_STORAGES: dict[str, _dt.dtype] = {
    "FloatStorage": _dt.float32, "DoubleStorage": _dt.float64, "HalfStorage": _dt.float16,
    "BFloat16Storage": _dt.bfloat16, "LongStorage": _dt.int64, "IntStorage": _dt.int32,
    "ShortStorage": _dt.int16, "CharStorage": _dt.int8, "ByteStorage": _dt.uint8,
    "BoolStorage": _dt.bool_, "ComplexFloatStorage": _dt.complex64,
    "ComplexDoubleStorage": _dt.complex128,
}
_STORAGE_OF = {d: n for n, d in _STORAGES.items()}
#: ``torch.<name>`` dtype globals -> jflow dtype (canonical names, as torch pickles them,
#: and the aliases).
_DTYPES: dict[str, _dt.dtype] = {
    **{d.name: d for d in _dt.all_dtypes},
    "float": _dt.float32, "double": _dt.float64, "half": _dt.float16, "long": _dt.int64,
    "int": _dt.int32, "short": _dt.int16, "cfloat": _dt.complex64, "cdouble": _dt.complex128,
}
_DATA_PKL = "data.pkl"


class _StorageType:
    """What ``find_class`` returns for a storage class global: its dtype (``None`` for
    ``UntypedStorage``, whose tensors carry their own)."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: _dt.dtype | None) -> None:
        self.name, self.dtype = name, dtype


class _Storage:
    """A checked storage record (what ``persistent_load`` returns); read on first use."""

    __slots__ = ("key", "dtype", "nbytes", "location")

    def __init__(self, key: str, dtype: _dt.dtype | None, nbytes: int, location: str) -> None:
        self.key, self.dtype, self.nbytes, self.location = key, dtype, nbytes, location


def _refused(name: str, what: str, hint: str = "") -> SerializationError:
    return SerializationError(f"flow.load: {name} is refused: {what}{hint}")


class _WeightsOnlyRefusal(SerializationError, pickle.UnpicklingError):
    """What ``weights_only=True`` refuses: jflow's ``SerializationError`` and, as PyTorch raises
    there, a ``pickle.UnpicklingError`` (scripts catch that one to retry with
    ``weights_only=False``)."""

    __module__ = "jflow.serialization"




# -- reading -----------------------------------------------------------------------------------
class _Reader:
    """One load: the archive, its storages (each read once), and the views built from them."""

    def __init__(self, archive: _Archive, prefix: str, name: str, map_location: Any) -> None:
        self.archive, self.prefix, self.name, self.map_location = (archive, prefix, name,
                                                                   map_location)
        self.big_endian = self._byteorder() == "big"
        self.storages: dict[str, _Storage] = {}
        self.raw: dict[str, bytes] = {}
        self.views: dict[tuple, Tensor] = {}
        stored = sum(i.file_size for i in archive.zf.infolist()
                     if i.filename.startswith(f"{prefix}/data/"))
        self.budget = stored + MAX_EXPANSION_BYTES

    def _byteorder(self) -> str:
        entry = f"{self.prefix}/byteorder"
        info = self.archive.zf.NameToInfo.get(entry)
        if info is None:
            return "little"  # (written before the record existed, on little-endian hosts)
        if info.file_size > 16:
            raise corrupted(self.name, entry, f"{info.file_size} bytes, not a byte order")
        raw = self.archive.read(entry, info.file_size, entry)
        order = raw.decode("ascii", "replace").strip()
        if order not in ("little", "big"):
            raise corrupted(self.name, entry, f"byte order {short(order)} (expected 'little' "
                                              f"or 'big')")
        return order

    # persistent ids -> storages
    def storage(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _refused(self.name, f"persistent id {short(pid)}: only storage records "
                                      f"(\"storage\", type, key, location, numel) are loaded")
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType):
            raise _refused(self.name, f"storage type {short(stype)} is not a storage class")
        if not (isinstance(key, str) and 0 < len(key) <= 256 and isinstance(location, str)
                and type(numel) is int and numel >= 0):
            raise corrupted(self.name, f"{self.prefix}/{_DATA_PKL}",
                            f"bad storage record {short(pid)}")
        itemsize = 1 if stype.dtype is None else stype.dtype.itemsize
        nbytes = numel * itemsize
        known = self.storages.get(key)
        if known is not None:
            if known.nbytes != nbytes:
                raise corrupted(self.name, f"storage {short(key)}", f"declared as {known.nbytes} "
                                                                   f"and as {nbytes} bytes")
            return _Storage(key, stype.dtype, nbytes, location)
        entry = f"{self.prefix}/data/{key}"
        label = f"storage {short(key)} (zip entry {short(entry)})"
        info = self.archive._info(entry, label)
        if info.file_size != nbytes:
            raise corrupted(self.name, label, f"declares {numel} elements of {itemsize} bytes "
                                              f"({nbytes} bytes), but the file holds "
                                              f"{info.file_size}")
        self.archive._check(info, nbytes, label)
        s = _Storage(key, stype.dtype, nbytes, location)
        self.storages[key] = s
        return s

    def _bytes(self, s: _Storage) -> bytes:
        if s.key not in self.raw:
            entry = f"{self.prefix}/data/{s.key}"
            self.raw[s.key] = self.archive.read(entry, s.nbytes,
                                                f"storage {short(s.key)} (zip entry "
                                                f"{short(entry)})")
        return self.raw[s.key]

    # the tensor-rebuilding functions PyTorch's pickles call
    def rebuild_tensor(self, storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any = False, backward_hooks: Any = None,
                       metadata: Any = None, dtype: Any = None) -> Tensor:
        if not isinstance(storage, _Storage):
            raise _refused(self.name, f"a tensor over {short(storage)}, not a storage")
        d = storage.dtype if dtype is None else dtype
        if not isinstance(d, _dt.dtype):
            raise corrupted(self.name, f"storage {short(storage.key)}",
                            f"a tensor of dtype {short(d)} over an untyped storage")
        if storage.dtype is not None and d is not storage.dtype:
            raise corrupted(self.name, f"storage {short(storage.key)}",
                            f"a {d.name} tensor over a {storage.dtype.name} storage")
        size, stride = self._dims(size, "size", storage), self._dims(stride, "stride", storage)
        if (type(storage_offset) is not int or storage_offset < 0 or len(size) != len(stride)
                or type(requires_grad) is not bool):
            raise corrupted(self.name, f"storage {short(storage.key)}",
                            f"bad view: offset {short(storage_offset)}, size {size}, stride "
                            f"{stride}, requires_grad {short(requires_grad)}")
        flags = _view_flags(metadata)
        if flags is None or not isinstance(backward_hooks, (dict, type(None))):
            raise _refused(self.name, f"tensor metadata {short(metadata)} / backward hooks "
                                      f"{short(backward_hooks)} (plain, conjugate and negative "
                                      f"views load)")
        key = (storage.key, d.name, storage_offset, size, stride, flags)
        t = self.views.get(key)
        if t is None:
            t = self._view(storage, d, storage_offset, size, stride, flags)
            self.views[key] = t
            out = t
        else:
            out = _wrap(t._value)  # another tensor over the same array
        if requires_grad and (out.is_floating_point() or out.is_complex()):
            out.requires_grad_(True)
        return out

    def rebuild_tensor_v3(self, storage: Any, storage_offset: Any, size: Any, stride: Any,
                          requires_grad: Any, backward_hooks: Any, dtype: Any,
                          metadata: Any = None) -> Tensor:
        return self.rebuild_tensor(storage, storage_offset, size, stride, requires_grad,
                                   backward_hooks, metadata, dtype=dtype)

    def rebuild_tensor_v1(self, storage: Any, storage_offset: Any, size: Any,
                          stride: Any) -> Tensor:
        return self.rebuild_tensor(storage, storage_offset, size, stride)

    def rebuild_parameter(self, data: Any, requires_grad: Any, backward_hooks: Any,
                          state: Any = None) -> Parameter:
        if not isinstance(data, Tensor) or type(requires_grad) is not bool:
            raise _refused(self.name, f"a Parameter of {short(data)}")
        if state not in (None, {}, (None, {}), ({}, None)):
            raise _refused(self.name, f"Parameter state {short(state)} (only plain parameters "
                                      f"load with weights_only=True)")
        grad = requires_grad and (data.is_floating_point() or data.is_complex())
        return Parameter(data.detach(), requires_grad=grad)

    def rebuild_from_type_v2(self, func: Any, new_type: Any, args: Any, state: Any) -> Tensor:
        if func not in (self.rebuild_tensor, self.rebuild_tensor_v3, self.rebuild_tensor_v1,
                        self.rebuild_parameter) or not isinstance(args, tuple):
            raise _refused(self.name, f"_rebuild_from_type_v2 of {short(func)}")
        t = func(*args)
        if new_type is Parameter and not isinstance(t, Parameter):
            t = Parameter(t.detach(), requires_grad=t.requires_grad)
        elif new_type not in (Tensor, Parameter):
            raise _refused(self.name, f"a tensor of class {short(new_type)}")
        if state not in (None, {}):
            raise _refused(self.name, f"tensor attributes {short(state)} (only plain tensors "
                                      f"load with weights_only=True)")
        return t

    def _dims(self, x: Any, what: str, storage: _Storage) -> tuple[int, ...]:
        if (not isinstance(x, tuple) or len(x) > MAX_NDIM
                or not all(type(v) is int and v >= 0 for v in x)):
            raise corrupted(self.name, f"storage {short(storage.key)}",
                            f"a view's {what} {short(x)} is not a tuple of at most {MAX_NDIM} "
                            f"non-negative ints")
        return tuple(x)

    def _view(self, s: _Storage, d: _dt.dtype, offset: int, size: tuple[int, ...],
              stride: tuple[int, ...], flags: tuple[bool, bool] = (False, False)) -> Tensor:
        label = f"storage {short(s.key)}"
        elements = s.nbytes // d.itemsize
        numel = math.prod(size)
        last = offset + sum((n - 1) * st for n, st in zip(size, stride)) if numel else offset - 1
        if last >= elements or offset > elements:
            raise corrupted(self.name, label, f"a {d.name} view (offset {offset}, size "
                                              f"{list(size)}, stride {list(stride)}) reaches "
                                              f"past its {elements} elements")
        nbytes = numel * d.itemsize
        if nbytes > self.budget:
            raise _refused(self.name, f"its tensors materialize more than the "
                                      f"{MAX_EXPANSION_BYTES} bytes views may add to the "
                                      f"file's storages (a {d.name} view of size "
                                      f"{list(size)} over storage {short(s.key)})")
        self.budget -= nbytes
        flat = np.frombuffer(self._bytes(s), dtype=np.uint8)
        if numel == 0:
            a = np.zeros(size, dtype=d.np)
        else:
            base = flat[offset * d.itemsize:(last + 1) * d.itemsize].view(d.np)
            a = np.lib.stride_tricks.as_strided(base, shape=size,
                                                strides=[st * d.itemsize for st in stride])
            if not a.flags.c_contiguous:  # (a whole contiguous storage is used as it is)
                a = a.copy(order="C")
            if self.big_endian and d.itemsize > 1:
                a = _byteswap(a, d)
            conj, neg = flags
            if conj and d.is_complex:
                a = np.conj(a)
            if neg and d is not _dt.bool_:
                a = np.negative(a)
        if a.dtype == np.bool_ and a.size and a.view(np.uint8).max() > 1:
            raise corrupted(self.name, label, "a bool tensor holds bytes other than 0 and 1")
        return to_tensor(a, self.map_location, s.location)


def _view_flags(metadata: Any) -> tuple[bool, bool] | None:
    """A tensor's metadata (PyTorch records the conjugate and negative bits of lazy views) as
    ``(conj, neg)``, or ``None`` if it holds anything else."""
    if metadata is None:
        return (False, False)
    if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"}:
        return None
    conj, neg = metadata.get("conj", False), metadata.get("neg", False)
    if type(conj) is not bool or type(neg) is not bool:
        return None
    return (conj, neg)


def _byteswap(a: np.ndarray, d: _dt.dtype) -> np.ndarray:
    """``a`` read from big-endian bytes, in native order (complex: each half swapped)."""
    part = d.itemsize // 2 if d.is_complex else d.itemsize
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[part]
    return a.view(u).byteswap().view(d.np)


class _Unpickler(pickle._Unpickler):
    """The full unpickler (``weights_only=False``): PyTorch's globals mapped onto jflow's,
    anything else imported as ``pickle`` would."""

    def __init__(self, data: bytes, reader: _Reader) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.reader = reader
        self.special = _special_globals(reader)

    def persistent_load(self, pid: Any) -> Any:
        return self.reader.storage(pid)

    def resolve(self, module: str, name: str) -> Any:
        """PyTorch's global ``module.name`` as jflow's object, or ``None`` if not PyTorch's."""
        full = f"{module}.{name}"
        if full in self.special:
            return self.special[full]
        if module == "torch" or module.startswith("torch."):
            obj = _jflow_equivalent(module, name)
            if obj is None:
                raise _refused(self.reader.name, f"it names {full}, which jflow has no "
                                                 f"equivalent of")
            return obj
        return None

    def find_class(self, module: str, name: str) -> Any:
        obj = self.resolve(module, name)
        return super().find_class(module, name) if obj is None else obj

    def load_build(self) -> None:

        inst = self.stack[-2]
        super().load_build()
        if isinstance(inst, Module):
            _adopt_module_state(inst)

    dispatch = dict(pickle._Unpickler.dispatch)
    dispatch[pickle.BUILD[0]] = load_build


def _adopt_module_state(m: Any) -> None:
    """A module whose attributes were unpickled (PyTorch's, or jflow's written with plain
    ``OrderedDict`` s): give it what jflow's ``Module`` keeps (its ``_Store`` dicts, which
    track structure changes, and ``_non_persistent_buffers``)."""

    d = m.__dict__
    if "_non_persistent_buffers" not in d:
        d["_non_persistent_buffers"] = set(d.pop("_non_persistent_buffers_set", ()) or ())
    for k in ("_parameters", "_buffers", "_modules"):
        v = d.get(k)
        if type(v) is not _Store:
            d[k] = _Store(v.items() if isinstance(v, dict) else ())
    for hooks in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
                  "_backward_pre_hooks"):
        d.setdefault(hooks, OrderedDict())
    d.setdefault("training", True)


class _WeightsOnlyUnpickler(_Unpickler):
    """``weights_only=True``: only tensors, containers, numbers, strings, bytes and the
    allowed globals; calls nothing else (see the module docstring)."""

    def __init__(self, data: bytes, reader: _Reader, allowed: list[Any]) -> None:
        super().__init__(data, reader)
        self.user: dict[str, Any] = {}
        for g in allowed:
            if isinstance(g, tuple) and len(g) == 2 and isinstance(g[1], str):
                self.user[g[1]] = g[0]
            else:
                mod = getattr(g, "__module__", None)
                qual = getattr(g, "__qualname__", None) or getattr(g, "__name__", None)
                if isinstance(mod, str) and isinstance(qual, str):
                    self.user[f"{mod}.{qual}"] = g
        self.user_ids = {id(g) for g in self.user.values()}
        self.callables = {id(v) for k, v in self.special.items() if callable(v) and k not in
                          ("torch.Tensor", "torch.nn.parameter.Parameter")}
        self.callables |= {id(v) for v in _SAFE_BUILTINS.values()}
        self.callables |= self.user_ids

    def _refuse(self, what: str, hint: str = "") -> SerializationError:
        """The error for what this load refuses (``_refused``'s message, PyTorch's type)."""
        return _WeightsOnlyRefusal(f"flow.load: {self.reader.name} is refused: {what}{hint}")

    def find_class(self, module: str, name: str) -> Any:
        if self.proto < 3:  # protocol 2 names Python 3's builtins as Python 2 did
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if full in self.user:
            return self.user[full]
        if full in self.special:
            return self.special[full]
        if full in _SAFE_BUILTINS:
            return _SAFE_BUILTINS[full]
        if module == "torch" or module.startswith("torch."):
            equivalent = self._allowed_equivalent(module, name)
            if equivalent is not None:
                return equivalent
        raise self._refuse(f"it names the global {full}, which weights_only=True does not load",
                           f". If you trust this file, allow it with "
                           f"flow.serialization.add_safe_globals([{name}]) (or the "
                           f"safe_globals([...]) context manager), or load it with "
                           f"weights_only=False, which runs whatever code the file names")

    def _allowed_equivalent(self, module: str, name: str) -> Any:
        """The allowed global that is jflow's equivalent of PyTorch's ``module.name``, found
        by name (nothing is imported: a hostile file must not make a load import modules)."""
        name = _ALIASES.get(f"{module}.{name}", name)
        found = self.user.get(f"jflow{module[len('torch'):]}.{name}")
        if found is None and module.startswith("torch.nn.modules"):
            found = next((g for g in self.user.values()
                          if getattr(g, "__qualname__", None) == name
                          and str(getattr(g, "__module__", "")).startswith("jflow.nn.")), None)
        return found

    def load_reduce(self) -> None:
        func = self.stack[-2]
        if id(func) not in self.callables or not isinstance(self.stack[-1], tuple):
            raise self._refuse(f"calling {short(func)}, which weights_only=True does not allow")
        super().load_reduce()

    def _check_newobj(self, cls: Any) -> None:
        if cls is not OrderedDict and id(cls) not in self.user_ids:
            raise self._refuse(f"creating a {short(cls)} object, which weights_only=True does "
                               f"not allow")

    def load_newobj(self) -> None:
        self._check_newobj(self.stack[-2])
        pickle._Unpickler.load_newobj(self)

    def load_newobj_ex(self) -> None:
        self._check_newobj(self.stack[-3])
        pickle._Unpickler.load_newobj_ex(self)

    def load_build(self) -> None:
        state, inst = self.stack[-1], self.stack[-2]
        if type(inst) is OrderedDict:  # state_dict()'s _metadata attribute
            if not (isinstance(state, dict) and all(type(k) is str for k in state)):
                raise self._refuse(f"OrderedDict state {short(state)}")
            self.stack.pop()
            inst.__dict__.update(state)
        elif id(type(inst)) in self.user_ids:
            _Unpickler.load_build(self)
        else:
            raise self._refuse(f"setting the state of a {type(inst).__name__} object, which "
                               f"weights_only=True does not allow")

    def load(self) -> Any:
        out = super().load()
        self._check_result(out)
        return out

    def _check_result(self, out: Any) -> None:
        """Refuse a result holding anything but data and allowed objects (a crafted pickle
        could leave a rebuild function or a storage record in it)."""
        todo, seen = [out], set()
        while todo:
            x = todo.pop()
            if x is None or type(x) in _LEAVES or isinstance(x, (Tensor, _dt.dtype, _Device)):
                continue
            if id(x) in seen:
                continue
            seen.add(id(x))
            if type(x) in (dict, OrderedDict):
                todo.extend(x.keys())
                todo.extend(x.values())
                todo.extend(getattr(x, "__dict__", {}).values())
            elif type(x) in (list, tuple, set, Size):
                todo.extend(x)
            elif id(x) not in self.user_ids and id(type(x)) not in self.user_ids:
                raise self._refuse(f"its object holds a {type(x).__name__}, which "
                                   f"weights_only=True does not load")

    def _no_opcode(self) -> None:
        raise self._refuse("an instance or extension-registry pickle opcode, which "
                           "weights_only=True does not allow")

    dispatch = dict(_Unpickler.dispatch)
    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex
    dispatch[pickle.BUILD[0]] = load_build
    for _op in (pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2, pickle.EXT4):
        dispatch[_op[0]] = _no_opcode
    del _op


def _bytearray(*args: Any) -> bytearray:
    """``bytearray`` as pickles call it (from bytes or a latin-1 string; never a size, which
    would allocate)."""
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
        return bytearray(args[0])
    if len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin1", "latin-1"):
        return bytearray(args[0], "latin-1")
    if not args:
        return bytearray()
    raise pickle.UnpicklingError(f"bytearray{short(args)} is not how a pickle writes bytes")


def _encode(text: Any, encoding: Any = "utf-8") -> bytes:
    """``_codecs.encode`` as protocol 2 pickles bytes: a latin-1 string."""
    if isinstance(text, str) and encoding in ("latin1", "latin-1"):
        return text.encode("latin-1")
    raise pickle.UnpicklingError(f"_codecs.encode({short(text)}, {short(encoding)}) is not "
                                 f"how a pickle writes bytes")


#: Values a weights_only result may hold as they are.
_LEAVES = (bool, int, float, complex, str, bytes, bytearray)

_SAFE_BUILTINS: dict[str, Any] = {
    "collections.OrderedDict": OrderedDict, "builtins.set": set, "builtins.complex": complex,
    "builtins.bytearray": _bytearray, "_codecs.encode": _encode,
}


def _special_globals(reader: _Reader) -> dict[str, Any]:
    """PyTorch's tensor-related globals, as this load resolves them."""
    g: dict[str, Any] = {
        "torch._utils._rebuild_tensor": reader.rebuild_tensor_v1,
        "torch._utils._rebuild_tensor_v2": reader.rebuild_tensor,
        "torch._utils._rebuild_tensor_v3": reader.rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": reader.rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": reader.rebuild_parameter,
        "torch._tensor._rebuild_from_type_v2": reader.rebuild_from_type_v2,
        "torch.Size": Size, "torch.device": _device, "torch.Tensor": Tensor,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.UntypedStorage": _StorageType("UntypedStorage", None),
        "torch.storage.UntypedStorage": _StorageType("UntypedStorage", None),
    }
    for n, d in _STORAGES.items():
        g[f"torch.{n}"] = g[f"torch.cuda.{n}"] = _StorageType(n, d)
    for n, d in _DTYPES.items():
        g[f"torch.{n}"] = d
    return g


def _device(*args: Any) -> _Device:
    """``torch.device(...)`` as a pickle calls it: a type string and an optional index."""
    if not (1 <= len(args) <= 2 and isinstance(args[0], str) and len(args[0]) <= 64
            and (len(args) == 1 or type(args[1]) is int)):
        raise pickle.UnpicklingError(f"torch.device{short(args)}")
    return _Device(*args)


#: PyTorch classes jflow folds into another (same attributes, same behaviour).
_ALIASES = {"torch.nn.modules.linear.NonDynamicallyQuantizableLinear": "Linear"}


def _jflow_equivalent(module: str, name: str) -> Any:
    """jflow's object for PyTorch's global ``module.name`` (``torch.nn.modules.linear.Linear``
    -> ``jflow.nn.modules.linear.Linear``; a module class jflow keeps elsewhere is looked up
    in ``jflow.nn``), or ``None``. Imports only ``jflow`` modules."""
    import importlib

    name = _ALIASES.get(f"{module}.{name}", name)
    target = "jflow" + module[len("torch"):]
    try:
        mod = importlib.import_module(target)
        obj = getattr(mod, name)
    except (ImportError, AttributeError, ValueError):
        obj = None
    if obj is None and module.startswith("torch.nn.modules"):
        obj = getattr(nn, name, None)
    return obj


def _archive_prefix(names: list[str]) -> str | None:
    """The folder holding ``data.pkl`` (torch.save's format), or ``None``."""
    for n in names[:4096]:
        head, _, tail = n.rpartition("/")
        if tail == _DATA_PKL and head and "/" not in head:
            return head
    return None


def is_torch_zip(names: list[str]) -> bool:
    return _archive_prefix(names) is not None


def load(src: IO[bytes], name: str, map_location: Any, weights_only: bool,
         allowed: list[Any]) -> Any:
    """Read a PyTorch zip checkpoint from the seekable ``src``."""
    archive = _Archive(src, name)
    with archive.zf:
        names = archive.zf.namelist()
        prefix = _archive_prefix(names)
        if prefix is None:
            raise SerializationError(f"flow.load: {name} is not a PyTorch checkpoint (a zip "
                                     f"file without <archive>/{_DATA_PKL})")
        _check_version(archive, prefix, name)
        entry = f"{prefix}/{_DATA_PKL}"
        info = archive._info(entry, entry)
        if info.file_size > MAX_PICKLE_BYTES:
            raise _refused(name, f"its pickle {entry} has {info.file_size} bytes, more than "
                                 f"the {MAX_PICKLE_BYTES} allowed")
        data = archive.read(entry, info.file_size, entry)
        reader = _Reader(archive, prefix, name, map_location)
        unpickler = (_WeightsOnlyUnpickler(data, reader, allowed) if weights_only
                     else _Unpickler(data, reader))
        try:
            return unpickler.load()
        except SerializationError:
            raise
        except Exception as err:  # noqa: BLE001  (any failure of a hostile pickle)
            raise corrupted(name, entry, f"cannot be unpickled ({type(err).__name__}: "
                                         f"{short(str(err))})") from err


def _check_version(archive: _Archive, prefix: str, name: str) -> None:
    for entry in (f"{prefix}/version", f"{prefix}/.data/version"):
        info = archive.zf.NameToInfo.get(entry)
        if info is None:
            continue
        if info.file_size > 16:
            raise corrupted(name, entry, f"{info.file_size} bytes, not a version number")
        text = archive.read(entry, info.file_size, entry).decode("ascii", "replace").strip()
        if not text.isdigit() or not 1 <= int(text) <= _MAX_VERSION:
            raise SerializationError(f"flow.load: {name} has PyTorch format version "
                                     f"{short(text)}; this jflow reads versions 1 to "
                                     f"{_MAX_VERSION}")
        return


# -- writing -----------------------------------------------------------------------------------
class _Global:
    """A global written by name (``torch._utils._rebuild_tensor_v2``) without importing it."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # (pickle wants a reduce function callable)
        raise TypeError(f"{self.module}.{self.name} is a name written into a pickle")


class _OutStorage:
    __slots__ = ("key", "array")

    def __init__(self, key: str, array: np.ndarray) -> None:
        self.key, self.array = key, array


class _Data:
    """A parameter's data, pickled as the plain tensor PyTorch's ``_rebuild_parameter``
    takes."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor


class _Pickler(pickle._Pickler):
    """Pickles jflow tensors, dtypes, sizes and devices under PyTorch's names; storages go
    to :attr:`storages` through ``persistent_id``."""

    def __init__(self, f: IO[bytes], protocol: int) -> None:
        super().__init__(f, protocol)
        self.storages: list[_OutStorage] = []
        self._globals: dict[tuple[str, str], _Global] = {}
        self._of_tensor: dict[int, _OutStorage] = {}
        self._keep: list[Any] = []

    def g(self, module: str, name: str) -> _Global:
        key = (module, name)
        if key not in self._globals:
            self._globals[key] = _Global(module, name)
        return self._globals[key]

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is _OutStorage:
            a = obj.array
            return ("storage", self.g("torch", _STORAGE_OF[_dt.from_numpy_dtype(a.dtype)]),
                    obj.key, "cpu", int(a.size))
        return None

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        if type(obj) is _Global:
            x = self.memo.get(id(obj))
            if x is not None:
                self.write(self.get(x[0]))
                return
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
            self.memoize(obj)
            return
        if isinstance(obj, _dt.dtype):
            self.save(self.g("torch", obj.name))
            return
        super().save(obj, save_persistent_id)

    def _storage(self, t: Tensor) -> _OutStorage:
        s = self._of_tensor.get(id(t))
        if s is None:
            a = np.asarray(t.detach().numpy())
            if not a.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
                a = a.copy(order="C")
            s = _OutStorage(str(len(self.storages)), a)
            self.storages.append(s)
            self._of_tensor[id(t)] = s
            self._keep.append(t)
        return s

    def _plain(self, t: Tensor, requires_grad: bool) -> tuple[Any, tuple[Any, ...]]:
        shape = tuple(int(n) for n in t.shape)
        return (self.g("torch._utils", "_rebuild_tensor_v2"),
                (self._storage(t), 0, shape, _contiguous_strides(shape), requires_grad,
                 OrderedDict()))

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            if isinstance(obj, Parameter):
                data = _Data(obj)
                self._keep.append(data)
                return (self.g("torch._utils", "_rebuild_parameter"),
                        (data, bool(obj.requires_grad), OrderedDict()))
            return self._plain(obj, bool(obj.requires_grad))
        if type(obj) is _Data:
            return self._plain(obj.tensor, False)
        if isinstance(obj, OrderedDict) and type(obj) is not OrderedDict and (
                type(obj).__module__ == "jflow.nn.modules.module"):
            # a module's _Store: written as the OrderedDict PyTorch's modules hold
            return (OrderedDict, (), getattr(obj, "__dict__", None) or None, None,
                    iter(obj.items()))
        if isinstance(obj, Size):
            return (self.g("torch", "Size"), (tuple(int(n) for n in obj),))
        if isinstance(obj, _Device):
            return (self.g("torch", "device"), (str(obj),))
        return NotImplemented


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def pickle_object(obj: Any, protocol: int = 2) -> tuple[bytes, list[_OutStorage]]:
    """``obj`` pickled as torch.save pickles it, and the storages it references; raises
    before any file is touched if something cannot be pickled."""
    if isinstance(protocol, bool) or not isinstance(protocol, int) or not 2 <= protocol <= 5:
        raise ValueError(f"flow.save: pickle_protocol must be 2 to 5, got {protocol!r}")
    buf = io.BytesIO()
    p = _Pickler(buf, protocol)
    try:
        p.dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as err:
        raise TypeError(f"flow.save: cannot pickle the object in PyTorch's format: "
                        f"{err}") from err
    return buf.getvalue(), p.storages


def write(f: IO[bytes], pickled: bytes, storages: list[_OutStorage]) -> None:
    """Write a torch.save-format zip to the binary file object ``f``."""
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(f"{ARCHIVE}/{_DATA_PKL}", pickled)
        zf.writestr(f"{ARCHIVE}/.format_version", "1")
        zf.writestr(f"{ARCHIVE}/.storage_alignment", "64")
        zf.writestr(f"{ARCHIVE}/byteorder", "little")
        for s in storages:
            a = s.array
            if sys.byteorder != "little" and a.dtype.itemsize > 1:
                a = a.byteswap()
            _write_aligned(zf, f"{ARCHIVE}/data/{s.key}", memoryview(a.reshape(-1).view(np.uint8)))
        zf.writestr(f"{ARCHIVE}/version", f"{VERSION}\n")
        zf.writestr(f"{ARCHIVE}/.data/serialization_id", secrets.token_hex(20))


def _write_aligned(zf: zipfile.ZipFile, name: str, data: memoryview) -> None:
    """A stored entry whose data starts at a multiple of 64 bytes (as torch.save aligns
    storages, so they can be memory-mapped), padded with an extra field as PyTorch does."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = len(data)
    zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT
    base = zf.fp.tell() + 30 + len(name.encode("utf-8")) + (20 if zip64 else 0) + 4
    pad = -base % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def write_path(path: str, pickled: bytes, storages: list[_OutStorage]) -> None:
    """Write to a new file at ``path`` (the atomic writer's temporary file)."""
    with open(path, "wb") as out:
        write(out, pickled, storages)


def is_torch_path(path: str) -> bool:
    """Whether ``path``'s name asks for PyTorch's format: ``.pt``, ``.pth``, ``.bin``."""
    return os.path.splitext(path)[1].lower() in (".pt", ".pth", ".bin")
