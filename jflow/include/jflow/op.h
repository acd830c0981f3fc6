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
// A handler written directly with XLA_FFI_DEFINE_HANDLER_SYMBOL can be registered with
// JFLOW_REGISTER_FFI_HANDLER(op, platform, symbol); jflow then passes the op's attrs by name
// with the declared types (float -> F32, double -> F64, int32 -> S32, int64 -> S64,
// bool -> PRED, string -> string) and cannot check the handler's binding.
//
// Attr types: float, double, int32_t, int64_t, bool, std::string. Platforms: "cpu", "cuda",
// "rocm". Shape inference: SameShapeAs(input) or Infer(fn) with
// `void fn(jflow::InferContext& ctx)` that sets every ctx.output(i) and may throw
// jflow::TypeError / jflow::ValueError (reported as Python TypeError / ValueError naming the op).
//
// The library exports three C entry points (weak symbols, defined once per library however
// many translation units include this header): jflow_library_describe, jflow_library_handler
// and jflow_library_infer. Everything else has hidden visibility, so two jflow libraries loaded
// into one process never share a registry.
#ifndef JFLOW_OP_H_
#define JFLOW_OP_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "xla/ffi/api/ffi.h"

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

// A tensor's logical shape and dtype ("float32", "int64", "bool", ...).
struct TensorDesc {
  std::vector<int64_t> shape;
  std::string dtype;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

// What an inference function sees: input descs and attr values; it fills the outputs.
class InferContext {
 public:
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  const TensorDesc& input(size_t i) const {
    if (i >= inputs_.size()) throw ValueError("input index " + std::to_string(i) + " out of range");
    return inputs_[i];
  }
  TensorDesc& output(size_t i) {
    if (i >= outputs_.size())
      throw ValueError("output index " + std::to_string(i) + " out of range");
    return outputs_[i];
  }
  // The attr's value; T must be the declared type (std::string for string attrs).
  template <typename T>
  T attr(const std::string& name) const;

 private:
  friend const char* Infer(const char*, const char*);
  struct Value {
    std::string type;
    double f = 0;
    int64_t i = 0;
    std::string s;
  };
  const Value& find(const std::string& name, const char* type) const {
    auto it = attrs_.find(name);
    if (it == attrs_.end()) throw ValueError("no attr named '" + name + "'");
    const std::string& t = it->second.type;
    bool ok = t == type || (t == "float" && std::string(type) == "double") ||
              (t == "int32" && std::string(type) == "int64");
    if (!ok) throw TypeError("attr '" + name + "' is " + t + ", read as " + type);
    return it->second;
  }
  std::vector<TensorDesc> inputs_;
  std::vector<TensorDesc> outputs_;
  std::map<std::string, Value> attrs_;
};

template <>
inline float InferContext::attr<float>(const std::string& n) const {
  return static_cast<float>(find(n, "float").f);
}
template <>
inline double InferContext::attr<double>(const std::string& n) const { return find(n, "double").f; }
template <>
inline int32_t InferContext::attr<int32_t>(const std::string& n) const {
  return static_cast<int32_t>(find(n, "int32").i);
}
template <>
inline int64_t InferContext::attr<int64_t>(const std::string& n) const { return find(n, "int64").i; }
template <>
inline bool InferContext::attr<bool>(const std::string& n) const { return find(n, "bool").i != 0; }
template <>
inline std::string InferContext::attr<std::string>(const std::string& n) const {
  return find(n, "string").s;
}

using InferFn = void (*)(InferContext&);

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

template <typename T>
std::string DefaultJson(const T& v) {
  if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_floating_point_v<T>) return Number(v);
  else if constexpr (std::is_integral_v<T>) return std::to_string(v);
  else return Quote(std::string(v));
}

}  // namespace detail

class OpDef {
 public:
  explicit OpDef(std::string name) : name_(std::move(name)) {}

  OpDef& Input(const std::string& name) { return Add(inputs_, name); }
  OpDef& Output(const std::string& name) { return Add(outputs_, name); }
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
  std::string attr_type(const std::string& name) const {
    for (const auto& a : attrs_)
      if (a.name == name) return a.type;
    return "";
  }
  std::string Json() const {
    std::string j = "{\"name\": " + detail::Quote(name_) + ", \"inputs\": " + List(inputs_) +
                    ", \"outputs\": " + List(outputs_) + ", \"attrs\": [";
    for (size_t i = 0; i < attrs_.size(); ++i) {
      j += (i ? ", " : "") + std::string("{\"name\": ") + detail::Quote(attrs_[i].name) +
           ", \"type\": " + detail::Quote(attrs_[i].type) +
           ", \"default\": " + attrs_[i].default_json + "}";
    }
    j += "], \"same_as\": " + (same_as_.empty() ? "null" : detail::Quote(same_as_)) +
         ", \"infer_fn\": " + (infer_ ? "true" : "false") + ", \"traits\": " + List(traits_) +
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
  static std::string List(const std::vector<std::string>& v) {
    std::string j = "[";
    for (size_t i = 0; i < v.size(); ++i) j += (i ? ", " : "") + detail::Quote(v[i]);
    return j + "]";
  }
  std::string name_;
  std::vector<std::string> inputs_, outputs_, traits_;
  std::vector<AttrDef> attrs_;
  std::string same_as_, sbp_, vmap_ = "sequential", doc_;
  InferFn infer_ = nullptr;
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
  XLA_FFI_Handler* handler() const { return handler_; }
  std::string Json() const {
    return "{\"op\": " + detail::Quote(op_) + ", \"platform\": " + detail::Quote(platform_) +
           ", \"name\": " + detail::Quote(name_) + ", \"params\": " + params_ +
           ", \"dtypes\": {" + dtypes_ + "}, \"priority\": " + std::to_string(priority_) + "}";
  }

 private:
  std::string op_, platform_, name_;
  XLA_FFI_Handler* handler_;
  std::string params_;  // JSON list of the kernel's parameters, or null for a raw handler
  std::string dtypes_;  // JSON object members: "arg": ["dtype", ...]
  int priority_ = 10;
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
inline const char* DtypeName(ffi::DataType d) {
  switch (d) {
    case ffi::DataType::PRED: return "bool";
    case ffi::DataType::S8: return "int8";
    case ffi::DataType::S16: return "int16";
    case ffi::DataType::S32: return "int32";
    case ffi::DataType::S64: return "int64";
    case ffi::DataType::U8: return "uint8";
    case ffi::DataType::F16: return "float16";
    case ffi::DataType::BF16: return "bfloat16";
    case ffi::DataType::F32: return "float32";
    case ffi::DataType::F64: return "float64";
    default: return "unsupported";
  }
}
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

template <typename... Ps>
struct TypeList {};

// JSON of one kernel parameter, e.g. {"kind": "in", "dtype": "float32", "rank": 2}.
template <typename P>
std::string ParamJson() {
  using T = std::decay_t<P>;
  if constexpr (ResultInfo<T>::value) {
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
                  "std::string_view) or a stream pointer (e.g. cudaStream_t)");
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
  if constexpr (ResultInfo<T>::value) {
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

template <auto Impl, int N>
XLA_FFI_Error* Trampoline(XLA_FFI_CallFrame* call_frame) {
  static auto* handler = [] {  // built on the first call, when every op is registered
    const KernelDef& k = GetRegistry().kernels[KernelSlot<Impl, N>::index];
    const OpDef* op = GetRegistry().find(k.op());
    std::vector<std::string> names = op ? op->attr_names() : std::vector<std::string>{};
    return BindParams<Impl>(ffi::Ffi::Bind(), names, 0, typename Params<decltype(Impl)>::List{})
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
    in >> n;
    for (size_t i = 0; i < n; ++i) {
      std::string name, text;
      in >> name >> text;
      InferContext::Value v;
      v.type = op->attr_type(name);
      if (v.type == "float" || v.type == "double") {
        v.f = std::strtod(text.c_str(), nullptr);
      } else if (v.type == "string") {
        for (size_t k = 1; k + 1 < text.size(); k += 2)  // "x" then hex bytes
          v.s += static_cast<char>(std::stoi(text.substr(k, 2), nullptr, 16));
      } else {
        v.i = std::strtoll(text.c_str(), nullptr, 10);
      }
      ctx.attrs_[name] = std::move(v);
    }
    if (!in) throw ValueError("malformed inference request");
    ctx.outputs_.resize(op->outputs().size());
    op->infer_fn()(ctx);
    std::ostringstream out;
    out << "ok\n";
    for (size_t i = 0; i < ctx.outputs_.size(); ++i) {
      const TensorDesc& d = ctx.outputs_[i];
      if (d.dtype.empty())
        throw ValueError("inference function did not set output " + std::to_string(i) + " ('" +
                         op->outputs()[i] + "')");
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
