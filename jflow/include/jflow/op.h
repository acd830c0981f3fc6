// jflow/op.h — declare jflow ops and their XLA FFI kernels in a shared library.
//
// A library built with this header is loaded by `flow.config.load_library(path)` (or built and
// loaded by `flow.utils.cpp_extension.load`). It declares, with static registrations in the
// style of OneFlow's REGISTER_USER_OP / REGISTER_USER_KERNEL:
//
//   JFLOW_REGISTER_OP("myrelu")               // op_type_name, globally unique
//       .Input("x")                            // inputs, in order
//       .Output("y")                           // outputs, in order
//       .Attr<float>("alpha", 0.1f)            // typed attr with a default (no default: required)
//       .SameShapeAs("x")                      // outputs get x's shape and dtype (or .Infer(fn))
//       .Sbp("elementwise")                    // optional: SBP signature family
//       .VmapMethod("broadcast_all");          // optional: how jax.vmap runs the kernel
//
//   static xla::ffi::Error MyReluCpu(xla::ffi::AnyBuffer x,
//                                    xla::ffi::Result<xla::ffi::AnyBuffer> y, float alpha) {...}
//   JFLOW_REGISTER_KERNEL("myrelu", "cpu", MyReluCpu);
//
// A kernel is a plain function; its XLA FFI binding is derived from its parameters:
//   * xla::ffi::AnyBuffer / xla::ffi::Buffer<dtype, rank>   -> the op's inputs, in order
//   * xla::ffi::Result<...buffer...>                         -> the op's outputs, in order
//   * float, double, int32_t, int64_t, bool, std::string_view -> the op's attrs, in declaration
//     order (the names come from the op, the types are checked against it when loading)
//   * a pointer (e.g. cudaStream_t)                          -> the platform stream
// Typed buffers (Buffer<F32>) also restrict which dtypes the kernel is selected for.
// An error the function returns (xla::ffi::Error::InvalidArgument("...")) reaches Python
// as JaxRuntimeError "INVALID_ARGUMENT: op 'myrelu': ffi kernel 'MyReluCpu' (cpu): ...".
// A handler written directly with XLA_FFI_DEFINE_HANDLER_SYMBOL can be registered with
// JFLOW_REGISTER_FFI_HANDLER(op, platform, symbol); jflow then passes the op's attrs by name
// with the declared types (float -> F32, double -> F64, int32 -> S32, int64 -> S64,
// bool -> PRED, string -> string) and cannot check the handler's binding.
//
// Attr types: float, double, int32_t, int64_t, bool, std::string, std::vector<int32_t>,
// std::vector<int64_t>, std::vector<float>, jflow::Shape and xla::ffi::DataType (kernels take
// the lists and shapes as xla::ffi::Span<const T>, a dtype as xla::ffi::DataType). Platforms:
// "cpu", "cuda", "rocm". Shape inference: SameShapeAs(input) or Infer(fn) with
// `void fn(jflow::InferContext& ctx)` that sets every ctx.output(i) and may throw
// jflow::TypeError / jflow::ValueError (reported as Python TypeError / ValueError naming the op).
//
// More of OneFlow's surface (docs/custom_ops.md has one example each):
//   * Input(name, n), InputWithMinimum(name, m), OptionalInput(name[, n]),
//     OptionalInputWithMinimum(name, m), and the same for outputs; kernels take
//     xla::ffi::RemainingArgs / RemainingRets and jflow::InputCounts / OutputCounts;
//   * SetCheckAttrFn(fn): `void fn(const jflow::AttrContext&)`, run per call before inference;
//     ctx.Fail(attr, msg) -> `op 'x': attr 'attr': msg`;
//   * SetGetSbpFn(fn): `void fn(jflow::SbpContext&)`, signatures built with
//     ctx.NewBuilder().Split(arg, axis) / Broadcast(arg) / PartialSum(arg) ... .Build();
//   * on a kernel, SetInferTmpSizeFn(fn): `size_t fn(const jflow::InferContext&)` bytes of
//     scratch, passed to the kernel as its last Result<AnyBuffer> (uint8).
//
// The library exports six C entry points (weak symbols, defined once per library however many
// translation units include this header): jflow_library_describe, jflow_library_handler,
// jflow_library_infer, jflow_library_check, jflow_library_sbp and jflow_library_tmp_size.
// Everything else has hidden visibility, so two jflow libraries loaded into one process never
// share a registry.
#ifndef JFLOW_OP_H_
#define JFLOW_OP_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <initializer_list>
#include <istream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "xla/ffi/api/ffi.h"

// DataType attrs reach kernels as xla::ffi::DataType (an FFI enum attribute of the XLA
// primitive-type number; jflow sends it as uint8).
XLA_FFI_REGISTER_ENUM_ATTR_DECODING(::xla::ffi::DataType);

namespace jflow {
// How many tensors each declared input (output) of the op got in this call, in declaration
// order: 1 for a plain one, 0/1 for an optional one, n for a variadic one. A kernel of an op
// with optional or variadic inputs takes `jflow::InputCounts` (and xla::ffi::RemainingArgs
// for the flat buffers); likewise `jflow::OutputCounts` and xla::ffi::RemainingRets.
template <int Tag>
struct Counts {
  ::xla::ffi::Span<const int64_t> counts;
  size_t size() const { return counts.size(); }
  int64_t operator[](size_t i) const { return counts[i]; }
  bool present(size_t i) const { return counts[i] > 0; }
  // index of the first flat buffer of declared argument i
  int64_t offset(size_t i) const {
    int64_t o = 0;
    for (size_t k = 0; k < i; ++k) o += counts[k];
    return o;
  }
};
using InputCounts = Counts<0>;
using OutputCounts = Counts<1>;
}  // namespace jflow

namespace xla::ffi {
template <int Tag>
struct AttrDecoding<::jflow::Counts<Tag>> {
  using Type = ::jflow::Counts<Tag>;
  static std::optional<Type> Decode(XLA_FFI_AttrType type, void* attr,
                                    DiagnosticEngine& diagnostic) {
    auto span = AttrDecoding<Span<const int64_t>>::Decode(type, attr, diagnostic);
    if (!span.has_value()) return std::nullopt;
    return Type{*span};
  }
};
}  // namespace xla::ffi

#define JFLOW_OP_ABI_VERSION 1
#define JFLOW_EXPORT extern "C" __attribute__((weak, visibility("default")))

// Everything in namespace jflow is hidden: each library keeps its own registry even when two
// jflow libraries (or two versions of this header) are loaded into one process.
#pragma GCC visibility push(hidden)
namespace jflow {

// ---------------------------------------------------------------------------------------------
// Shape inference through a C++ function
// ---------------------------------------------------------------------------------------------

// Thrown by an inference function: raised in Python as TypeError / ValueError, op name prefixed.
struct TypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ValueError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The C++ type of a shape attr (OneFlow's Shape): `.Attr<jflow::Shape>("shape", {2, 3})`.
// A kernel receives it as xla::ffi::Span<const int64_t>.
struct Shape {
  std::vector<int64_t> dims;
  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : dims(d) {}
  explicit Shape(std::vector<int64_t> d) : dims(std::move(d)) {}
  int64_t NumAxes() const { return static_cast<int64_t>(dims.size()); }
  int64_t At(size_t i) const { return dims.at(i); }
};

// Raised by an attr check function for one attr: the user sees `op 'x': attr 'name': msg`.
struct AttrError : std::runtime_error {
  AttrError(std::string attr_name, const std::string& msg)
      : std::runtime_error(msg), attr(std::move(attr_name)) {}
  std::string attr;
};

// A tensor's logical shape and dtype ("float32", "int64", "bool", ...).
struct TensorDesc {
  std::vector<int64_t> shape;
  std::string dtype;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

class OpDef;

// The attr values of one call, as a check function (SetCheckAttrFn) sees them.
class AttrContext {
 public:
  // The attr's value; T is the declared type (std::string for string and dtype attrs,
  // std::vector<int32_t> / std::vector<int64_t> / std::vector<float> / Shape for lists).
  template <typename T>
  T attr(const std::string& name) const;
  // Throws AttrError for `name` (reported as `op 'x': attr 'name': msg`).
  [[noreturn]] void Fail(const std::string& name, const std::string& msg) const {
    throw AttrError(name, msg);
  }

 protected:
  friend const char* Infer(const char*, const char*);
  friend const char* Check(const char*, const char*);
  template <typename Ctx>
  friend void ReadAttrs(const OpDef&, std::istream&, Ctx&);
  struct Value {
    std::string type;
    double f = 0;
    int64_t i = 0;
    std::string s;
    std::vector<int64_t> li;
    std::vector<double> lf;
  };
  const Value& find(const std::string& name, const char* type) const {
    auto it = attrs_.find(name);
    if (it == attrs_.end()) throw ValueError("no attr named '" + name + "'");
    const std::string& t = it->second.type;
    std::string want(type);
    bool ok = t == want || (t == "float" && want == "double") ||
              (t == "int32" && want == "int64") || (t == "dtype" && want == "string") ||
              (t == "shape" && want == "int64_list") || (t == "int32_list" && want == "int64_list") ||
              (t == "int64_list" && want == "shape") || (t == "int32_list" && want == "shape");
    if (!ok) throw TypeError("attr '" + name + "' is " + t + ", read as " + type);
    return it->second;
  }
  std::map<std::string, Value> attrs_;
};

// What an inference function sees: input descs and attr values; it fills the outputs.
class InferContext : public AttrContext {
 public:
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  const TensorDesc& input(size_t i) const {
    if (i >= inputs_.size()) throw ValueError("input index " + std::to_string(i) + " out of range");
    return inputs_[i];
  }
  // Sets how many tensors the op's variadic / optional output `name` gets (it starts with
  // its count, its minimum, or 1 when optional); ctx.output(i) indexes the flat outputs.
  void set_num_outputs(const std::string& name, size_t n) {
    if (name != variadic_name_) throw ValueError("output '" + name + "' is not variadic");
    size_t cur = outputs_.size() - (num_declared_ - 1);
    if (n > cur) outputs_.insert(outputs_.begin() + variadic_pos_ + cur, n - cur, TensorDesc{});
    else outputs_.erase(outputs_.begin() + variadic_pos_ + n, outputs_.begin() + variadic_pos_ + cur);
  }
  TensorDesc& output(size_t i) {
    if (i >= outputs_.size())
      throw ValueError("output index " + std::to_string(i) + " out of range");
    return outputs_[i];
  }

 private:
  friend const char* Infer(const char*, const char*);
  friend void ReadInputs(std::istream&, InferContext&);
  std::vector<TensorDesc> inputs_;
  std::vector<TensorDesc> outputs_;
  std::string variadic_name_;
  size_t variadic_pos_ = 0, num_declared_ = 0;
};

template <>
inline float AttrContext::attr<float>(const std::string& n) const {
  return static_cast<float>(find(n, "float").f);
}
template <>
inline double AttrContext::attr<double>(const std::string& n) const { return find(n, "double").f; }
template <>
inline int32_t AttrContext::attr<int32_t>(const std::string& n) const {
  return static_cast<int32_t>(find(n, "int32").i);
}
template <>
inline int64_t AttrContext::attr<int64_t>(const std::string& n) const { return find(n, "int64").i; }
template <>
inline bool AttrContext::attr<bool>(const std::string& n) const { return find(n, "bool").i != 0; }
template <>
inline std::string AttrContext::attr<std::string>(const std::string& n) const {
  return find(n, "string").s;
}
template <>
inline std::vector<int64_t> AttrContext::attr<std::vector<int64_t>>(const std::string& n) const {
  return find(n, "int64_list").li;
}
template <>
inline std::vector<int32_t> AttrContext::attr<std::vector<int32_t>>(const std::string& n) const {
  const auto& v = find(n, "int32_list").li;
  return std::vector<int32_t>(v.begin(), v.end());
}
template <>
inline std::vector<float> AttrContext::attr<std::vector<float>>(const std::string& n) const {
  const auto& v = find(n, "float_list").lf;
  return std::vector<float>(v.begin(), v.end());
}
template <>
inline Shape AttrContext::attr<Shape>(const std::string& n) const {
  return Shape(find(n, "shape").li);
}

using InferFn = void (*)(InferContext&);

// One tensor of an input or output argument: OpArg("in", 0) (OneFlow's user_op::OpArg).
struct OpArg {
  std::string name;
  int index = 0;
  OpArg(std::string n, int i = 0) : name(std::move(n)), index(i) {}  // NOLINT: implicit
  OpArg(const char* n, int i = 0) : name(n), index(i) {}             // NOLINT: implicit
};

// What an SBP function (OneFlow's SetGetSbpFn) sees: the inputs' logical shapes (dtype is
// empty: SBP depends on shapes only), the attrs, and a builder of signatures. Each signature
// gives every input and output tensor one of Split(axis) / Broadcast / PartialSum; the
// all-broadcast signature is always implied.
class SbpContext : public AttrContext {
 public:
  class Builder {
   public:
    Builder& Split(const OpArg& arg, int64_t axis) { return Set(arg, "S" + std::to_string(axis)); }
    Builder& Split(const std::vector<OpArg>& args, int64_t axis) {
      for (const auto& a : args) Split(a, axis);
      return *this;
    }
    Builder& Broadcast(const OpArg& arg) { return Set(arg, "B"); }
    Builder& Broadcast(const std::vector<OpArg>& args) {
      for (const auto& a : args) Broadcast(a);
      return *this;
    }
    Builder& PartialSum(const OpArg& arg) { return Set(arg, "P"); }
    Builder& PartialSum(const std::vector<OpArg>& args) {
      for (const auto& a : args) PartialSum(a);
      return *this;
    }
    // Adds the signature; every input and output tensor must have been given an SBP.
    void Build() {
      for (size_t i = 0; i < sig_.size(); ++i)
        if (sig_[i].empty())
          throw ValueError("SBP signature leaves " + ctx_->Describe(i) + " unset");
      ctx_->sigs_.push_back(sig_);
    }

   private:
    friend class SbpContext;
    explicit Builder(SbpContext* ctx) : ctx_(ctx), sig_(ctx->flat_size()) {}
    Builder& Set(const OpArg& arg, std::string v) {
      sig_[ctx_->FlatIndex(arg)] = std::move(v);
      return *this;
    }
    SbpContext* ctx_;
    std::vector<std::string> sig_;
  };

  Builder NewBuilder() { return Builder(this); }
  size_t num_inputs() const { return inputs_.size(); }
  const TensorDesc& input(size_t i) const {
    if (i >= inputs_.size()) throw ValueError("input index " + std::to_string(i) + " out of range");
    return inputs_[i];
  }
  // The logical desc of input tensor `arg` (OneFlow: LogicalTensorDesc4InputArgNameAndIndex).
  const TensorDesc& input(const OpArg& arg) const { return inputs_.at(FlatIndex(arg)); }
  const TensorDesc& LogicalTensorDesc4InputArgNameAndIndex(const std::string& name,
                                                          int index) const {
    return input(OpArg(name, index));
  }
  // Every input (output) tensor, e.g. for a variadic input: Split(ctx.inputs(), 0).
  std::vector<OpArg> inputs() const { return Args(in_names_, in_counts_); }
  std::vector<OpArg> outputs() const { return Args(out_names_, out_counts_); }

 private:
  friend const char* Sbp(const char*, const char*);
  size_t flat_size() const { return Total(in_counts_) + Total(out_counts_); }
  static size_t Total(const std::vector<int64_t>& c) {
    size_t t = 0;
    for (int64_t x : c) t += size_t(x);
    return t;
  }
  static std::vector<OpArg> Args(const std::vector<std::string>& names,
                                 const std::vector<int64_t>& counts) {
    std::vector<OpArg> out;
    for (size_t i = 0; i < names.size(); ++i)
      for (int64_t k = 0; k < counts[i]; ++k) out.emplace_back(names[i], int(k));
    return out;
  }
  size_t FlatIndex(const OpArg& arg) const {
    size_t base = 0;
    for (int out = 0; out < 2; ++out) {
      const auto& names = out ? out_names_ : in_names_;
      const auto& counts = out ? out_counts_ : in_counts_;
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i] == arg.name) {
          if (arg.index < 0 || arg.index >= counts[i])
            throw ValueError("'" + arg.name + "' has " + std::to_string(counts[i]) +
                             " tensor(s) here; index " + std::to_string(arg.index) +
                             " is out of range");
          return base + size_t(arg.index);
        }
        base += size_t(counts[i]);
      }
    }
    throw ValueError("the op has no input or output named '" + arg.name + "'");
  }
  std::string Describe(size_t flat) const {
    for (const auto& a : inputs())
      if (FlatIndex(a) == flat) return "input '" + a.name + "' " + std::to_string(a.index);
    for (const auto& a : outputs())
      if (FlatIndex(a) == flat) return "output '" + a.name + "' " + std::to_string(a.index);
    return "tensor " + std::to_string(flat);
  }
  std::vector<TensorDesc> inputs_;
  std::vector<std::string> in_names_, out_names_;
  std::vector<int64_t> in_counts_, out_counts_;
  std::vector<std::vector<std::string>> sigs_;
};
using SbpFn = void (*)(SbpContext&);
// A kernel's scratch size in bytes (OneFlow's SetInferTmpSizeFn), from the inputs' shapes and
// dtypes and the attrs; the kernel takes the buffer as its last Result (Result<AnyBuffer>).
using TmpSizeFn = size_t (*)(const InferContext&);
// An attr check (OneFlow's SetCheckAttrFn): runs when the op is called, before inference;
// throws AttrError (ctx.Fail(attr, msg)), ValueError or TypeError.
using CheckAttrFn = void (*)(const AttrContext&);

// ---------------------------------------------------------------------------------------------
// Op and kernel declarations
// ---------------------------------------------------------------------------------------------

namespace detail {

// JSON text of a string / a number that reads back as the same float or double.
inline std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

template <typename T>
std::string Number(T v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  for (int p = 1; p <= 17; ++p) {  // the shortest text that reads back exactly
    std::snprintf(buf, sizeof buf, "%.*g", p, static_cast<double>(v));
    if (static_cast<T>(std::strtod(buf, nullptr)) == v) break;
  }
  return buf;
}

template <typename T>
struct AttrType {
  static_assert(sizeof(T) == 0,
                "jflow attr types are float, double, int32_t, int64_t, bool and std::string");
};
template <> struct AttrType<float> { static constexpr const char* name = "float"; };
template <> struct AttrType<double> { static constexpr const char* name = "double"; };
template <> struct AttrType<int32_t> { static constexpr const char* name = "int32"; };
template <> struct AttrType<int64_t> { static constexpr const char* name = "int64"; };
template <> struct AttrType<bool> { static constexpr const char* name = "bool"; };
template <> struct AttrType<std::string> { static constexpr const char* name = "string"; };
template <> struct AttrType<std::string_view> { static constexpr const char* name = "string"; };
template <> struct AttrType<std::vector<int32_t>> { static constexpr const char* name = "int32_list"; };
template <> struct AttrType<std::vector<int64_t>> { static constexpr const char* name = "int64_list"; };
template <> struct AttrType<std::vector<float>> { static constexpr const char* name = "float_list"; };
template <> struct AttrType<Shape> { static constexpr const char* name = "shape"; };
template <> struct AttrType<::xla::ffi::DataType> { static constexpr const char* name = "dtype"; };
// how kernels receive list / shape attrs
template <> struct AttrType<::xla::ffi::Span<const int32_t>> {
  static constexpr const char* name = "int32_list";
};
template <> struct AttrType<::xla::ffi::Span<const int64_t>> {
  static constexpr const char* name = "int64_list";
};
template <> struct AttrType<::xla::ffi::Span<const float>> {
  static constexpr const char* name = "float_list";
};

inline const char* DtypeName(::xla::ffi::DataType d) {
  using ::xla::ffi::DataType;
  switch (d) {
    case DataType::PRED: return "bool";
    case DataType::S8: return "int8";
    case DataType::S16: return "int16";
    case DataType::S32: return "int32";
    case DataType::S64: return "int64";
    case DataType::U8: return "uint8";
    case DataType::F16: return "float16";
    case DataType::BF16: return "bfloat16";
    case DataType::F32: return "float32";
    case DataType::F64: return "float64";
    default: return "unsupported";
  }
}

template <typename T>
std::string ListJson(const std::vector<T>& v) {
  std::string j = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) j += ", ";
    if constexpr (std::is_floating_point_v<T>) j += Number(v[i]);
    else j += std::to_string(v[i]);
  }
  return j + "]";
}
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

template <typename T>
std::string DefaultJson(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (IsVector<T>::value) return ListJson(v);
  else if constexpr (std::is_same_v<T, Shape>) return ListJson(v.dims);
  else if constexpr (std::is_same_v<T, ::xla::ffi::DataType>) return Quote(DtypeName(v));
  else if constexpr (std::is_floating_point_v<T>) return Number(v);
  else if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else return Quote(std::string(v));
}

}  // namespace detail

class OpDef {
 public:
  explicit OpDef(std::string name) : name_(std::move(name)) {}

  // Inputs, in order (OneFlow's names): Input(name) one tensor; Input(name, n) exactly n;
  // InputWithMinimum(name, m) at least m; OptionalInput(name[, n]) absent or 1 (n);
  // OptionalInputWithMinimum(name, m) absent or at least m. Outputs likewise (an op has at
  // most one output that is not a plain one; its count comes from the inference function).
  OpDef& Input(const std::string& name) { return Arg(inputs_, in_json_, name, false, 1, 1); }
  OpDef& Input(const std::string& name, int num) {
    return Arg(inputs_, in_json_, name, false, num, num);
  }
  OpDef& InputWithMinimum(const std::string& name, int min) {
    return Arg(inputs_, in_json_, name, false, -1, min);
  }
  OpDef& OptionalInput(const std::string& name, int num = 1) {
    return Arg(inputs_, in_json_, name, true, num, num);
  }
  OpDef& OptionalInputWithMinimum(const std::string& name, int min) {
    return Arg(inputs_, in_json_, name, true, -1, min);
  }
  OpDef& OptionalInputWithMininum(const std::string& name, int min) {  // OneFlow's spelling
    return OptionalInputWithMinimum(name, min);
  }
  OpDef& Output(const std::string& name) { return Arg(outputs_, out_json_, name, false, 1, 1); }
  OpDef& Output(const std::string& name, int num) {
    return Arg(outputs_, out_json_, name, false, num, num);
  }
  OpDef& OutputWithMinimum(const std::string& name, int min) {
    return Arg(outputs_, out_json_, name, false, -1, min);
  }
  OpDef& OptionalOutput(const std::string& name, int num = 1) {
    return Arg(outputs_, out_json_, name, true, num, num);
  }
  OpDef& OptionalOutputWithMinimum(const std::string& name, int min) {
    return Arg(outputs_, out_json_, name, true, -1, min);
  }
  // A required attr.
  template <typename T>
  OpDef& Attr(const std::string& name) {
    attrs_.push_back({name, detail::AttrType<T>::name, "null"});
    return *this;
  }
  // An attr with a default value.
  template <typename T>
  OpDef& Attr(const std::string& name, const T& default_value) {
    attrs_.push_back({name, detail::AttrType<T>::name, detail::DefaultJson(default_value)});
    return *this;
  }
  OpDef& Attr(const std::string& name, const char* default_value) {
    return Attr<std::string>(name, std::string(default_value));
  }
  // Every output has the shape and dtype of input `name` (the default: the first input).
  OpDef& SameShapeAs(const std::string& name) {
    same_as_ = name;
    return *this;
  }
  OpDef& Infer(InferFn fn) {
    infer_ = fn;
    return *this;
  }
  // OneFlow's SetCheckAttrFn: validates attr values when the op is called (before inference).
  OpDef& SetCheckAttrFn(CheckAttrFn fn) {
    check_ = fn;
    return *this;
  }
  CheckAttrFn check_fn() const { return check_; }
  // OneFlow's SetGetSbpFn: the op's SBP signatures, built per call from the input shapes
  // (replaces .Sbp(family)).
  OpDef& SetGetSbpFn(SbpFn fn) {
    sbp_fn_ = fn;
    return *this;
  }
  SbpFn sbp_fn() const { return sbp_fn_; }
  const std::vector<std::string>& inputs() const { return inputs_; }
  // "NoGrad" (no backward rule wanted) or "CpuOnly"; "NoSideEffect" is always set.
  OpDef& Trait(const std::string& trait) { return Add(traits_, trait); }
  // "elementwise" (S(i) on every axis) or "elementwise_linear" (also P -> P).
  OpDef& Sbp(const std::string& family) {
    sbp_ = family;
    return *this;
  }
  // How jax.vmap runs the kernels: "sequential" (default: one call per batch element),
  // "broadcast_all" (one call on the batched arrays: for kernels that accept any leading
  // dimensions, e.g. elementwise ones), "expand_dims".
  OpDef& VmapMethod(const std::string& method) {
    vmap_ = method;
    return *this;
  }
  OpDef& Doc(const std::string& doc) {
    doc_ = doc;
    return *this;
  }

  const std::string& name() const { return name_; }
  std::vector<std::string> attr_names() const {
    std::vector<std::string> out;
    for (const auto& a : attrs_) out.push_back(a.name);
    return out;
  }
  InferFn infer_fn() const { return infer_; }
  const std::vector<std::string>& outputs() const { return outputs_; }
  // The number of tensors an output starts with in inference (n, the minimum, 1 if optional).
  size_t initial_count(size_t i) const { return out_init_[i]; }
  // The output that is not a plain one (-1 if none).
  int variadic_output() const { return variadic_out_; }
  std::string attr_type(const std::string& name) const {
    for (const auto& a : attrs_)
      if (a.name == name) return a.type;
    return "";
  }
  std::string Json() const {
    std::string j = "{\"name\": " + detail::Quote(name_) + ", \"inputs\": " +
                    Raw(in_json_) + ", \"outputs\": " + Raw(out_json_) + ", \"attrs\": [";
    for (size_t i = 0; i < attrs_.size(); ++i) {
      j += (i ? ", " : "") + std::string("{\"name\": ") + detail::Quote(attrs_[i].name) +
           ", \"type\": " + detail::Quote(attrs_[i].type) +
           ", \"default\": " + attrs_[i].default_json + "}";
    }
    j += "], \"same_as\": " + (same_as_.empty() ? "null" : detail::Quote(same_as_)) +
         ", \"infer_fn\": " + (infer_ ? "true" : "false") +
         ", \"check_fn\": " + (check_ ? "true" : "false") +
         ", \"sbp_fn\": " + (sbp_fn_ ? "true" : "false") + ", \"traits\": " + List(traits_) +
         ", \"sbp\": " + (sbp_.empty() ? "null" : detail::Quote(sbp_)) +
         ", \"vmap_method\": " + detail::Quote(vmap_) + ", \"doc\": " + detail::Quote(doc_) + "}";
    return j;
  }

 private:
  struct AttrDef {
    std::string name, type, default_json;
  };
  OpDef& Add(std::vector<std::string>& v, const std::string& s) {
    v.push_back(s);
    return *this;
  }
  OpDef& Arg(std::vector<std::string>& names, std::vector<std::string>& json,
             const std::string& name, bool optional, int count, int min) {
    names.push_back(name);
    bool plain = !optional && count == 1;
    if (&names == &outputs_) {
      out_init_.push_back(count >= 0 ? count : min);
      if (!plain) variadic_out_ = static_cast<int>(outputs_.size()) - 1;
    }
    if (plain) {
      json.push_back(detail::Quote(name));
    } else {
      json.push_back("{\"name\": " + detail::Quote(name) + ", \"optional\": " +
                     (optional ? "true" : "false") + ", \"count\": " +
                     (count >= 0 ? std::to_string(count) : std::string("null")) +
                     ", \"min\": " + std::to_string(min) + "}");
    }
    return *this;
  }
  static std::string Raw(const std::vector<std::string>& v) {
    std::string j = "[";
    for (size_t i = 0; i < v.size(); ++i) j += (i ? ", " : "") + v[i];
    return j + "]";
  }
  static std::string List(const std::vector<std::string>& v) {
    std::string j = "[";
    for (size_t i = 0; i < v.size(); ++i) j += (i ? ", " : "") + detail::Quote(v[i]);
    return j + "]";
  }
  std::string name_;
  std::vector<std::string> inputs_, outputs_, traits_, in_json_, out_json_;
  std::vector<size_t> out_init_;
  int variadic_out_ = -1;
  std::vector<AttrDef> attrs_;
  std::string same_as_, sbp_, vmap_ = "sequential", doc_;
  InferFn infer_ = nullptr;
  CheckAttrFn check_ = nullptr;
  SbpFn sbp_fn_ = nullptr;
};

class KernelDef {
 public:
  KernelDef(std::string op, std::string platform, std::string name, XLA_FFI_Handler* handler,
            std::string params_json)
      : op_(std::move(op)), platform_(std::move(platform)), name_(std::move(name)),
        handler_(handler), params_(std::move(params_json)) {}

  // Selection priority among an op's kernels for a platform (jflow: 0 fallback, 10 default,
  // 20 optimized).
  KernelDef& Priority(int p) {
    priority_ = p;
    return *this;
  }
  // The kernel needs a scratch buffer of fn(ctx) bytes: its last Result (a uint8 buffer that
  // jflow allocates as a hidden output, on CPU and GPU alike, and drops after the call).
  KernelDef& SetInferTmpSizeFn(TmpSizeFn fn) {
    tmp_ = fn;
    return *this;
  }
  TmpSizeFn tmp_fn() const { return tmp_; }

  // The dtypes the kernel accepts for input/output `arg`, comma-separated
  // ("float32,float64"); other dtypes select another kernel or fail with a clear error.
  // (Typed buffers, Buffer<F32>, restrict their argument by themselves.)
  KernelDef& Dtypes(const std::string& arg, const std::string& dtypes) {
    dtypes_ += (dtypes_.empty() ? "" : ", ") + detail::Quote(arg) + ": [";
    size_t start = 0;
    for (bool first = true; start <= dtypes.size(); first = false) {
      size_t end = dtypes.find(',', start);
      if (end == std::string::npos) end = dtypes.size();
      std::string d = dtypes.substr(start, end - start);
      d.erase(0, d.find_first_not_of(' '));
      d.erase(d.find_last_not_of(' ') + 1);
      dtypes_ += (first ? "" : ", ") + detail::Quote(d);
      start = end + 1;
    }
    dtypes_ += "]";
    return *this;
  }

  const std::string& op() const { return op_; }
  const std::string& name() const { return name_; }
  const std::string& platform() const { return platform_; }
  XLA_FFI_Handler* handler() const { return handler_; }
  std::string Json() const {
    return "{\"op\": " + detail::Quote(op_) + ", \"platform\": " + detail::Quote(platform_) +
           ", \"name\": " + detail::Quote(name_) + ", \"params\": " + params_ +
           ", \"dtypes\": {" + dtypes_ + "}, \"priority\": " + std::to_string(priority_) +
           ", \"tmp\": " + (tmp_ ? "true" : "false") + "}";
  }

 private:
  std::string op_, platform_, name_;
  XLA_FFI_Handler* handler_;
  std::string params_;  // JSON list of the kernel's parameters, or null for a raw handler
  std::string dtypes_;  // JSON object members: "arg": ["dtype", ...]
  int priority_ = 10;
  TmpSizeFn tmp_ = nullptr;
};

// One registry per library (hidden: never shared with another loaded library).
struct Registry {
  std::deque<OpDef> ops;  // deque: references handed out by the builders stay valid
  std::deque<KernelDef> kernels;
  const OpDef* find(const std::string& name) const {
    for (const auto& op : ops)
      if (op.name() == name) return &op;
    return nullptr;
  }
};

inline Registry& GetRegistry() {
  static Registry registry;
  return registry;
}

// ---------------------------------------------------------------------------------------------
// Kernels as plain functions: the XLA FFI binding is derived from the parameter types
// ---------------------------------------------------------------------------------------------

namespace detail {
namespace ffi = ::xla::ffi;

template <typename T>
struct BufferInfo : std::false_type {};
template <>
struct BufferInfo<ffi::AnyBuffer> : std::true_type {
  static std::string Json() { return "\"dtype\": null, \"rank\": null"; }
};
template <ffi::DataType D, size_t R>
struct BufferInfo<ffi::Buffer<D, R>> : std::true_type {
  static std::string Json() {
    return std::string("\"dtype\": \"") + DtypeName(D) + "\", \"rank\": " +
           (R == ffi::internal::kDynamicRank ? std::string("null") : std::to_string(R));
  }
};
template <typename T>
struct ResultInfo : std::false_type {};
template <typename T>
struct ResultInfo<ffi::Result<T>> : std::true_type {
  using Inner = T;
};

template <typename T>
struct IsAttr : std::false_type {};
template <> struct IsAttr<float> : std::true_type {};
template <> struct IsAttr<double> : std::true_type {};
template <> struct IsAttr<int32_t> : std::true_type {};
template <> struct IsAttr<int64_t> : std::true_type {};
template <> struct IsAttr<bool> : std::true_type {};
template <> struct IsAttr<std::string_view> : std::true_type {};
template <> struct IsAttr<ffi::Span<const int32_t>> : std::true_type {};
template <> struct IsAttr<ffi::Span<const int64_t>> : std::true_type {};
template <> struct IsAttr<ffi::Span<const float>> : std::true_type {};
template <> struct IsAttr<ffi::DataType> : std::true_type {};

template <typename... Ps>
struct TypeList {};

// JSON of one kernel parameter, e.g. {"kind": "in", "dtype": "float32", "rank": 2}.
template <typename P>
std::string ParamJson() {
  using T = std::decay_t<P>;
  if constexpr (std::is_same_v<T, ffi::RemainingArgs>) {
    return "{\"kind\": \"in_rest\"}";
  } else if constexpr (std::is_same_v<T, ffi::RemainingRets>) {
    return "{\"kind\": \"out_rest\"}";
  } else if constexpr (std::is_same_v<T, InputCounts>) {
    return "{\"kind\": \"input_counts\"}";
  } else if constexpr (std::is_same_v<T, OutputCounts>) {
    return "{\"kind\": \"output_counts\"}";
  } else if constexpr (ResultInfo<T>::value) {
    using B = typename ResultInfo<T>::Inner;
    static_assert(BufferInfo<B>::value, "a jflow kernel result must be Result<AnyBuffer> or "
                                        "Result<Buffer<dtype, rank>>");
    return "{\"kind\": \"out\", " + BufferInfo<B>::Json() + "}";
  } else if constexpr (BufferInfo<T>::value) {
    return "{\"kind\": \"in\", " + BufferInfo<T>::Json() + "}";
  } else if constexpr (std::is_pointer_v<T>) {
    return "{\"kind\": \"stream\"}";
  } else {
    static_assert(IsAttr<T>::value,
                  "a jflow kernel parameter must be an input buffer (AnyBuffer, Buffer<...>), an "
                  "output (Result<...>), an attr (float, double, int32_t, int64_t, bool, "
                  "std::string_view, xla::ffi::Span<const int32_t / int64_t / float> for list and "
                  "shape attrs, xla::ffi::DataType) or a stream pointer (e.g. cudaStream_t)");
    return std::string("{\"kind\": \"attr\", \"type\": \"") + AttrType<T>::name + "\"}";
  }
}

template <typename F>
struct Params;
template <typename... Ps>
struct Params<ffi::Error (*)(Ps...)> {
  using List = TypeList<Ps...>;
  static std::string Json() {
    std::string j = "[";
    bool first = true;
    ((j += (first ? "" : ", ") + ParamJson<Ps>(), first = false), ...);
    return j + "]";
  }
};

// Binds the remaining parameters one by one (attr names taken from the op, in order), then
// the function itself: returns XLA's handler.
template <auto Impl, typename Binding>
auto BindParams(Binding&& b, const std::vector<std::string>&, size_t, TypeList<>) {
  return b.To(Impl);
}
template <auto Impl, typename Binding, typename P, typename... Rest>
auto BindParams(Binding&& b, const std::vector<std::string>& names, size_t next,
                TypeList<P, Rest...>) {
  using T = std::decay_t<P>;
  if constexpr (std::is_same_v<T, ffi::RemainingArgs>) {
    return BindParams<Impl>(std::move(b).RemainingArgs(), names, next, TypeList<Rest...>{});
  } else if constexpr (std::is_same_v<T, ffi::RemainingRets>) {
    return BindParams<Impl>(std::move(b).RemainingRets(), names, next, TypeList<Rest...>{});
  } else if constexpr (std::is_same_v<T, InputCounts>) {
    return BindParams<Impl>(std::move(b).template Attr<T>("jflow_input_counts"), names, next,
                            TypeList<Rest...>{});
  } else if constexpr (std::is_same_v<T, OutputCounts>) {
    return BindParams<Impl>(std::move(b).template Attr<T>("jflow_output_counts"), names, next,
                            TypeList<Rest...>{});
  } else if constexpr (ResultInfo<T>::value) {
    return BindParams<Impl>(std::move(b).template Ret<typename ResultInfo<T>::Inner>(), names,
                            next, TypeList<Rest...>{});
  } else if constexpr (BufferInfo<T>::value) {
    return BindParams<Impl>(std::move(b).template Arg<T>(), names, next, TypeList<Rest...>{});
  } else if constexpr (std::is_pointer_v<T>) {
    return BindParams<Impl>(std::move(b).template Ctx<ffi::PlatformStream<T>>(), names, next,
                            TypeList<Rest...>{});
  } else {
    // a name that cannot match (decoding then fails cleanly) if the op has fewer attrs; the
    // loader has already refused such a kernel
    std::string name = next < names.size() ? names[next] : "__jflow_missing_attr";
    return BindParams<Impl>(std::move(b).template Attr<T>(std::move(name)), names, next + 1,
                            TypeList<Rest...>{});
  }
}

// Per registration (a kernel function may be registered more than once): its registry index.
namespace {
template <auto Impl, int N>
struct KernelSlot {
  static inline size_t index = 0;
};

// The kernel function as XLA calls it: an error it returns names the op and the kernel
// ("op 'myrelu': ffi kernel 'MyReluCpu' (cpu): ..."), in every context (eager, jax.jit,
// flow.jit, lazy, global tensors); XLA's own message would be the bare text.
template <auto Impl, int N, typename F>
struct Named;
template <auto Impl, int N, typename... Ps>
struct Named<Impl, N, ffi::Error (*)(Ps...)> {
  static ffi::Error Call(Ps... ps) {
    ffi::Error e = Impl(std::forward<Ps>(ps)...);
    if (e.success()) return e;
    const KernelDef& k = GetRegistry().kernels[KernelSlot<Impl, N>::index];
    return ffi::Error(e.errc().value_or(ffi::ErrorCode::kUnknown),
                      "op '" + k.op() + "': ffi kernel '" + k.name() + "' (" + k.platform() +
                          "): " + e.message());
  }
};

template <auto Impl, int N>
XLA_FFI_Error* Trampoline(XLA_FFI_CallFrame* call_frame) {
  static auto* handler = [] {  // built on the first call, when every op is registered
    const KernelDef& k = GetRegistry().kernels[KernelSlot<Impl, N>::index];
    const OpDef* op = GetRegistry().find(k.op());
    std::vector<std::string> names = op ? op->attr_names() : std::vector<std::string>{};
    return BindParams<&Named<Impl, N, decltype(Impl)>::Call>(
               ffi::Ffi::Bind(), names, 0, typename Params<decltype(Impl)>::List{})
        .release();
  }();
  return handler->Call(call_frame);
}
}  // namespace

template <auto Impl, int N>
KernelDef& RegisterKernel(const char* op, const char* platform, const char* name) {
  Registry& r = GetRegistry();
  KernelSlot<Impl, N>::index = r.kernels.size();
  r.kernels.emplace_back(op, platform, name, &Trampoline<Impl, N>,
                         Params<decltype(Impl)>::Json());
  return r.kernels.back();
}

inline KernelDef& RegisterHandler(const char* op, const char* platform, const char* name,
                                  XLA_FFI_Handler* handler) {
  Registry& r = GetRegistry();
  r.kernels.emplace_back(op, platform, name, handler, "null");
  return r.kernels.back();
}

inline OpDef& RegisterOp(const char* name) { return GetRegistry().ops.emplace_back(name); }

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// The library's entry points (read by jflow.kernels.ffi through ctypes)
// ---------------------------------------------------------------------------------------------

// Reads "<n_attrs>\n" then per attr "<name> <value>\n" (bool 0/1, string as "x" + hex bytes,
// dtype by name, lists and shapes as "L" + comma-separated numbers).
template <typename Ctx>
void ReadAttrs(const OpDef& op, std::istream& in, Ctx& ctx) {
  size_t n = 0;
  in >> n;
  for (size_t i = 0; i < n; ++i) {
    std::string name, text;
    in >> name >> text;
    AttrContext::Value v;
    v.type = op.attr_type(name);
    if (v.type == "float" || v.type == "double") {
      v.f = std::strtod(text.c_str(), nullptr);
    } else if (v.type == "string") {
      for (size_t k = 1; k + 1 < text.size(); k += 2)  // "x" then hex bytes
        v.s += static_cast<char>(std::stoi(text.substr(k, 2), nullptr, 16));
    } else if (v.type == "dtype") {
      v.s = text;
    } else if (v.type == "int32_list" || v.type == "int64_list" || v.type == "shape" ||
               v.type == "float_list") {
      size_t start = 1;  // "L" then comma-separated numbers
      while (start < text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        std::string item = text.substr(start, end - start);
        if (v.type == "float_list") v.lf.push_back(std::strtod(item.c_str(), nullptr));
        else v.li.push_back(std::strtoll(item.c_str(), nullptr, 10));
        start = end + 1;
      }
    } else {
      v.i = std::strtoll(text.c_str(), nullptr, 10);
    }
    ctx.attrs_[name] = std::move(v);
  }
}

// Runs op `op_name`'s attr check on a request of attrs only (ReadAttrs' format). Answers
// "ok\n", "AttrError\n<attr>\n<msg>", or "<TypeError|ValueError>\n<msg>".
inline const char* Check(const char* op_name, const char* request) {
  thread_local std::string answer;
  try {
    const OpDef* op = GetRegistry().find(op_name);
    if (op == nullptr || op->check_fn() == nullptr)
      throw ValueError(std::string("op '") + op_name + "' has no C++ attr check function");
    AttrContext ctx;
    std::istringstream in(request);
    ReadAttrs(*op, in, ctx);
    if (!in) throw ValueError("malformed check request");
    op->check_fn()(ctx);
    answer = "ok\n";
  } catch (const AttrError& e) {
    answer = "AttrError\n" + e.attr + "\n" + e.what();
  } catch (const TypeError& e) {
    answer = std::string("TypeError\n") + e.what();
  } catch (const std::exception& e) {
    answer = std::string("ValueError\n") + e.what();
  } catch (...) {
    answer = "ValueError\nthe attr check function threw a non-standard exception";
  }
  return answer.c_str();
}

// Reads "<n_inputs>\n" then per input "<dtype> <rank> <dims...>\n".
inline void ReadInputs(std::istream& in, InferContext& ctx) {
  size_t n = 0;
  in >> n;
  for (size_t i = 0; i < n; ++i) {
    TensorDesc d;
    size_t rank = 0;
    in >> d.dtype >> rank;
    d.shape.resize(rank);
    for (auto& s : d.shape) in >> s;
    ctx.inputs_.push_back(std::move(d));
  }
}

// Runs op `op_name`'s SBP function on a request: "<n> <count per declared input>\n", the
// inputs as in ReadInputs, "<n> <count per declared output>\n", then the attrs (ReadAttrs).
// Answers "ok\n" + one line per signature ("S0 B | P": inputs, then outputs), or an error.
inline const char* Sbp(const char* op_name, const char* request) {
  thread_local std::string answer;
  try {
    const OpDef* op = GetRegistry().find(op_name);
    if (op == nullptr || op->sbp_fn() == nullptr)
      throw ValueError(std::string("op '") + op_name + "' has no C++ SBP function");
    SbpContext ctx;
    std::istringstream in(request);
    size_t n = 0;
    in >> n;
    ctx.in_counts_.resize(n);
    for (auto& c : ctx.in_counts_) in >> c;
    InferContext descs;
    ReadInputs(in, descs);
    for (size_t i = 0; i < descs.num_inputs(); ++i) ctx.inputs_.push_back(descs.input(i));
    in >> n;
    ctx.out_counts_.resize(n);
    for (auto& c : ctx.out_counts_) in >> c;
    ReadAttrs(*op, in, ctx);
    if (!in) throw ValueError("malformed SBP request");
    ctx.in_names_ = op->inputs();
    ctx.out_names_ = op->outputs();
    op->sbp_fn()(ctx);
    std::string out = "ok\n";
    size_t n_in = SbpContext::Total(ctx.in_counts_);
    for (const auto& sig : ctx.sigs_) {
      for (size_t i = 0; i < sig.size(); ++i) out += (i == n_in ? "| " : "") + sig[i] + " ";
      if (n_in == sig.size()) out += "| ";
      out += "\n";
    }
    answer = out;
  } catch (const TypeError& e) {
    answer = std::string("TypeError\n") + e.what();
  } catch (const std::exception& e) {
    answer = std::string("ValueError\n") + e.what();
  } catch (...) {
    answer = "ValueError\nthe SBP function threw a non-standard exception";
  }
  return answer.c_str();
}

// Runs kernel `index`'s tmp size function on an inference request. Answers "ok\n<bytes>" or
// "<TypeError|ValueError>\n<msg>".
inline const char* TmpSize(int64_t index, const char* request) {
  thread_local std::string answer;
  try {
    const Registry& r = GetRegistry();
    if (index < 0 || static_cast<size_t>(index) >= r.kernels.size() ||
        r.kernels[index].tmp_fn() == nullptr)
      throw ValueError("kernel " + std::to_string(index) + " has no tmp size function");
    const KernelDef& k = r.kernels[index];
    InferContext ctx;
    std::istringstream in(request);
    ReadInputs(in, ctx);
    if (const OpDef* op = r.find(k.op())) ReadAttrs(*op, in, ctx);
    if (!in) throw ValueError("malformed tmp size request");
    answer = "ok\n" + std::to_string(k.tmp_fn()(ctx));
  } catch (const TypeError& e) {
    answer = std::string("TypeError\n") + e.what();
  } catch (const std::exception& e) {
    answer = std::string("ValueError\n") + e.what();
  } catch (...) {
    answer = "ValueError\nthe tmp size function threw a non-standard exception";
  }
  return answer.c_str();
}

// Runs op `op_name`'s inference function on a request written by jflow.kernels.ffi:
//   "<n_inputs>\n" then per input "<dtype> <rank> <dims...>\n",
//   "<n_attrs>\n" then per attr "<name> <value>\n" (bool 0/1, string as "x" + hex bytes).
// Answers "ok\n" + per output "<dtype> <rank> <dims...>\n", or "<TypeError|ValueError>\n<msg>".
inline const char* Infer(const char* op_name, const char* request) {
  thread_local std::string answer;
  try {
    const OpDef* op = GetRegistry().find(op_name);
    if (op == nullptr || op->infer_fn() == nullptr)
      throw ValueError(std::string("op '") + op_name + "' has no C++ inference function");
    InferContext ctx;
    std::istringstream in(request);
    ReadInputs(in, ctx);
    ReadAttrs(*op, in, ctx);
    if (!in) throw ValueError("malformed inference request");
    size_t n_flat = 0;
    for (size_t i = 0; i < op->outputs().size(); ++i) n_flat += op->initial_count(i);
    ctx.outputs_.resize(n_flat);
    ctx.num_declared_ = op->outputs().size();
    if (op->variadic_output() >= 0) {
      ctx.variadic_pos_ = static_cast<size_t>(op->variadic_output());
      ctx.variadic_name_ = op->outputs()[ctx.variadic_pos_];
    }
    op->infer_fn()(ctx);
    std::ostringstream out;
    out << "ok\n";
    for (size_t i = 0; i < ctx.outputs_.size(); ++i) {
      const TensorDesc& d = ctx.outputs_[i];
      if (d.dtype.empty())
        throw ValueError("inference function did not set output " + std::to_string(i));
      out << d.dtype << ' ' << d.shape.size();
      for (int64_t s : d.shape) out << ' ' << s;
      out << '\n';
    }
    answer = out.str();
  } catch (const TypeError& e) {
    answer = std::string("TypeError\n") + e.what();
  } catch (const std::exception& e) {
    answer = std::string("ValueError\n") + e.what();
  } catch (...) {
    answer = "ValueError\nthe inference function threw a non-standard exception";
  }
  return answer.c_str();
}

}  // namespace jflow
#pragma GCC visibility pop

// JSON: {"abi": 1, "ops": [...], "kernels": [...]} (ops and kernels in registration order).
JFLOW_EXPORT const char* jflow_library_describe() {
  static std::string json;
  const jflow::Registry& r = jflow::GetRegistry();
  json = "{\"abi\": " + std::to_string(JFLOW_OP_ABI_VERSION) + ", \"ops\": [";
  for (size_t i = 0; i < r.ops.size(); ++i) json += (i ? ", " : "") + r.ops[i].Json();
  json += "], \"kernels\": [";
  for (size_t i = 0; i < r.kernels.size(); ++i) json += (i ? ", " : "") + r.kernels[i].Json();
  json += "]}";
  return json.c_str();
}

// The XLA FFI handler of kernel `index` (registration order), or null.
JFLOW_EXPORT void* jflow_library_handler(int64_t index) {
  const jflow::Registry& r = jflow::GetRegistry();
  if (index < 0 || static_cast<size_t>(index) >= r.kernels.size()) return nullptr;
  return reinterpret_cast<void*>(r.kernels[index].handler());
}

JFLOW_EXPORT const char* jflow_library_infer(const char* op_name, const char* request) {
  return jflow::Infer(op_name, request);
}

JFLOW_EXPORT const char* jflow_library_sbp(const char* op_name, const char* request) {
  return jflow::Sbp(op_name, request);
}

JFLOW_EXPORT const char* jflow_library_tmp_size(int64_t index, const char* request) {
  return jflow::TmpSize(index, request);
}

JFLOW_EXPORT const char* jflow_library_check(const char* op_name, const char* request) {
  return jflow::Check(op_name, request);
}

#define JFLOW_CONCAT_(a, b) a##b
#define JFLOW_CONCAT(a, b) JFLOW_CONCAT_(a, b)
#define JFLOW_UNIQUE(prefix) JFLOW_CONCAT(prefix, __COUNTER__)

// JFLOW_REGISTER_OP("name").Input(...).Output(...).Attr<T>(...)...;
#define JFLOW_REGISTER_OP(name) \
  [[maybe_unused]] static ::jflow::OpDef& JFLOW_UNIQUE(jflow_op_) = ::jflow::detail::RegisterOp(name)

// JFLOW_REGISTER_KERNEL("op", "cpu" | "cuda" | "rocm", function)[.Dtypes(arg, "f32,..")]
//     [.Priority(p)];
#define JFLOW_REGISTER_KERNEL(op, platform, fn)                       \
  [[maybe_unused]] static ::jflow::KernelDef& JFLOW_UNIQUE(jflow_kernel_) = \
      ::jflow::detail::RegisterKernel<&fn, __COUNTER__>(op, platform, #fn)

// JFLOW_REGISTER_FFI_HANDLER("op", platform, symbol) for a handler defined with
// XLA_FFI_DEFINE_HANDLER_SYMBOL (or XLA_FFI_DEFINE_HANDLER).
#define JFLOW_REGISTER_FFI_HANDLER(op, platform, handler)              \
  [[maybe_unused]] static ::jflow::KernelDef& JFLOW_UNIQUE(jflow_kernel_) = \
      ::jflow::detail::RegisterHandler(op, platform, #handler, handler)

#endif  // JFLOW_OP_H_
