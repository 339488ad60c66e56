// Dynamic dispatch by element type: the plumbing between a kernel file's per-target bodies and
// its public templates. Not per-target itself: compiled once, like the `#if HWY_ONCE` part.
//
// Each kernel body `<name>_impl` is a template over T, compiled once per target. HWY_EXPORT takes
// a plain name, not a template-id, so each target names the two instances it exports,
// `<name>_impl_f32` and `<name>_impl_f64`; the public template forwards to one of them, and is
// explicitly instantiated for float and double (the symbols the public header declares). Two
// macros write all of that once per kernel:
//
//   // per-target part, in namespace attograd::kernels::HWY_NAMESPACE:
//   ATTOGRAD_KERNEL_TARGET(gelu_forward);
//
//   // `#if HWY_ONCE` part, in namespace attograd::kernels:
//   ATTOGRAD_KERNEL(void, gelu_forward, (T* y, const T* x, int64_t n), (y, x, n));
//
// The second expands to
//
//   HWY_EXPORT(gelu_forward_impl_f32);
//   HWY_EXPORT(gelu_forward_impl_f64);
//   template <typename T>
//   void gelu_forward(T* y, const T* x, int64_t n) {
//     return ATTOGRAD_DYNAMIC_DISPATCH(T, gelu_forward_impl)(y, x, n);
//   }
//   template <typename T>
//   using gelu_forward_signature = void(T* y, const T* x, int64_t n);
//   template gelu_forward_signature<float> gelu_forward<float>;
//   template gelu_forward_signature<double> gelu_forward<double>;
//
// where ATTOGRAD_DYNAMIC_DISPATCH(T, gelu_forward_impl) is
// HWY_DYNAMIC_DISPATCH(gelu_forward_impl_f32) for float and the _f64 one for double: the best
// target this CPU supports (or the one hwy::SetSupportedTargetsForTest chose). The alias template
// spells the function type from the single parameter list, so the explicit instantiations need no
// second copy of it.
#pragma once

#include <type_traits>

namespace attograd::kernels {

// f32 when T is float, f64 when T is double: the two dispatched function pointers of one kernel.
template <typename T, class F32, class F64>
constexpr auto* for_element_type(F32* f32, F64* f64) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "the kernels are instantiated for float and double");
  if constexpr (std::is_same_v<T, float>) {
    return f32;
  } else {
    return f64;
  }
}

}  // namespace attograd::kernels

// HWY_DYNAMIC_DISPATCH(name##_f32) or HWY_DYNAMIC_DISPATCH(name##_f64), by T (see above). Expanded
// where hwy/highway.h is included; both table entries are looked up, only the one for T is called.
#define ATTOGRAD_DYNAMIC_DISPATCH(T, name)                                      \
  (*::attograd::kernels::for_element_type<T>(&HWY_DYNAMIC_DISPATCH(name##_f32), \
                                             &HWY_DYNAMIC_DISPATCH(name##_f64)))

// Highway 1.0.3's WASM target has no f64 vectors (HWY_HAVE_FLOAT64 is 0 there), so the
// WebAssembly build (cmake/wasm.cmake) defines ATTOGRAD_KERNELS_F64_REFERENCE: each kernel's
// double instance is then its scalar reference twin (reference::name in <family>_ref.h, the
// same parameters), and only the float instance is a Highway kernel. f64 is what gradient checks
// run in, where exactness matters and speed does not; f32 training keeps its SIMD kernels.
#if defined(ATTOGRAD_KERNELS_F64_REFERENCE)

#include "autograd/kernels/attention_ref.h"
#include "autograd/kernels/cross_entropy_ref.h"
#include "autograd/kernels/elementwise_ref.h"
#include "autograd/kernels/gelu_ref.h"
#include "autograd/kernels/layer_norm_ref.h"
#include "autograd/kernels/matmul_ref.h"
#include "autograd/kernels/optimizer_ref.h"
#include "autograd/kernels/reduce_ref.h"
#include "autograd/kernels/softmax_ref.h"

#define ATTOGRAD_KERNEL_TARGET(name) constexpr auto& name##_impl_f32 = name##_impl<float>

#define ATTOGRAD_KERNEL(ret, name, params, args)         \
  HWY_EXPORT(name##_impl_f32);                           \
  template <typename T>                                  \
  ret name params {                                      \
    if constexpr (std::is_same_v<T, double>) {           \
      return ::attograd::kernels::reference::name args;  \
    } else {                                             \
      return HWY_DYNAMIC_DISPATCH(name##_impl_f32) args; \
    }                                                    \
  }                                                      \
  template <typename T>                                  \
  using name##_signature = ret params;                   \
  template name##_signature<float> name<float>;          \
  template name##_signature<double> name<double>

#else

// The two names HWY_EXPORT needs, for the per-target part: name##_impl_f32 and name##_impl_f64,
// references to name##_impl<float> and name##_impl<double>.
#define ATTOGRAD_KERNEL_TARGET(name)                    \
  constexpr auto& name##_impl_f32 = name##_impl<float>; \
  constexpr auto& name##_impl_f64 = name##_impl<double>

// The public kernel `template <typename T> ret name params`, for the `#if HWY_ONCE` part: both
// exports, the template forwarding `args` to the best target's name##_impl, and its float and
// double instantiations (see above). `params` is the parenthesised parameter list, written with
// T; `args` the parenthesised parameter names.
#define ATTOGRAD_KERNEL(ret, name, params, args)           \
  HWY_EXPORT(name##_impl_f32);                             \
  HWY_EXPORT(name##_impl_f64);                             \
  template <typename T>                                    \
  ret name params {                                        \
    return ATTOGRAD_DYNAMIC_DISPATCH(T, name##_impl) args; \
  }                                                        \
  template <typename T>                                    \
  using name##_signature = ret params;                     \
  template name##_signature<float> name<float>;            \
  template name##_signature<double> name<double>

#endif  // ATTOGRAD_KERNELS_F64_REFERENCE
