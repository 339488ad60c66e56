// Dynamic dispatch by element type, for the `#if HWY_ONCE` part at the end of each kernel file.
// Not per-target: compiled once, like that part.
//
// Each kernel body is a template over T, compiled once per target. HWY_EXPORT takes a plain name,
// not a template-id, so a kernel file names the two instances it exports, `<name>_f32` and
// `<name>_f64`, and its public template forwards to one of them:
//
//   HWY_EXPORT(gelu_forward_impl_f32);
//   HWY_EXPORT(gelu_forward_impl_f64);
//
//   template <typename T>
//   void gelu_forward(T* y, const T* x, int64_t n) {
//     ATTOGRAD_DYNAMIC_DISPATCH(T, gelu_forward_impl)(y, x, n);
//   }
//
// which is HWY_DYNAMIC_DISPATCH(gelu_forward_impl_f32)(y, x, n) for float and the _f64 one for
// double: the best target this CPU supports (or the one hwy::SetSupportedTargetsForTest chose).
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
