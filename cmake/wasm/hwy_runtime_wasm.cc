// What Highway's library (libhwy) supplies to a program, for the WebAssembly build, where
// Debian packages no libhwy (cmake/wasm.cmake). The kernels are compiled with
// HWY_COMPILE_ONLY_STATIC for the one target HWY_WASM, so HWY_DYNAMIC_DISPATCH is a direct call
// and no dispatch table needs GetChosenTarget at run time; what the headers still declare is
// defined here with Highway 1.0.3's signatures (hwy/base.h, hwy/targets.h,
// hwy/aligned_allocator.h) and its documented behaviour.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hwy/aligned_allocator.h"
#include "hwy/base.h"
#include "hwy/targets.h"

#if !HWY_ARCH_WASM
#error "hwy_runtime_wasm.cc is for the WebAssembly build only; native builds link libhwy"
#endif

namespace hwy {

// A Highway internal check failed (HWY_ASSERT): print where and why, then abort, as libhwy does.
HWY_NORETURN void Abort(const char* file, int line, const char* format, ...) {
  char message[800];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof message, format, args);
  va_end(args);
  std::fprintf(stderr, "Abort at %s:%d: %s\n", file, line, message);
  std::fflush(stderr);
  std::abort();
}

namespace {
// SetSupportedTargetsForTest's mock (0: none) and DisableTargets' mask. The build has one
// target, so both only decide whether SupportedTargets names it; never 0 (see targets.h).
int64_t supported_mask_for_test = 0;
int64_t disabled_targets = 0;
}  // namespace

int64_t SupportedTargets() {
  int64_t targets = supported_mask_for_test != 0 ? supported_mask_for_test : HWY_TARGETS;
  targets &= ~disabled_targets;
  return targets != 0 ? targets : HWY_STATIC_TARGET;
}

void DisableTargets(int64_t targets) { disabled_targets = targets; }

void SetSupportedTargetsForTest(int64_t targets) { supported_mask_for_test = targets; }

ChosenTarget& GetChosenTarget() {
  static ChosenTarget chosen;
  return chosen;
}

// Aligned allocation, laid out as libhwy does it: a HWY_ALIGNMENT-aligned payload with a header
// just before it (in the alignment padding) that holds the pointer the allocator returned, for
// FreeAlignedBytes, and the payload size, for AlignedDeleter's destructor calls.
namespace {
constexpr size_t kAlignment = HWY_ALIGNMENT;  // >= the 16-byte vectors of HWY_WASM
struct Header {
  void* allocated;
  size_t payload_size;
};
static_assert(kAlignment >= sizeof(Header) && (kAlignment & (kAlignment - 1)) == 0);

Header read_header(const void* aligned_pointer) {
  Header header;
  std::memcpy(&header, static_cast<const char*>(aligned_pointer) - sizeof(Header), sizeof header);
  return header;
}
}  // namespace

void* AllocateAlignedBytes(size_t payload_size, AllocPtr alloc_ptr, void* opaque_ptr) {
  if (payload_size > SIZE_MAX - 2 * kAlignment) return nullptr;  // size overflow
  const size_t bytes = payload_size + 2 * kAlignment;
  void* allocated = alloc_ptr == nullptr ? std::malloc(bytes) : alloc_ptr(opaque_ptr, bytes);
  if (allocated == nullptr) return nullptr;
  // The first aligned address at least one alignment past the start: room for the header.
  const uintptr_t start = reinterpret_cast<uintptr_t>(allocated);
  const uintptr_t payload = (start + kAlignment) & ~(uintptr_t{kAlignment} - 1);
  const Header header{allocated, payload_size};
  std::memcpy(reinterpret_cast<void*>(payload - sizeof(Header)), &header, sizeof header);
  return reinterpret_cast<void*>(payload);
}

void FreeAlignedBytes(const void* aligned_pointer, FreePtr free_ptr, void* opaque_ptr) {
  if (aligned_pointer == nullptr) return;
  void* allocated = read_header(aligned_pointer).allocated;
  if (free_ptr == nullptr) {
    std::free(allocated);
  } else {
    free_ptr(opaque_ptr, allocated);
  }
}

void AlignedDeleter::DeleteAlignedArray(void* aligned_pointer, FreePtr free_ptr, void* opaque_ptr,
                                        ArrayDeleter deleter) {
  if (aligned_pointer == nullptr) return;
  if (deleter != nullptr) deleter(aligned_pointer, read_header(aligned_pointer).payload_size);
  FreeAlignedBytes(aligned_pointer, free_ptr, opaque_ptr);
}

}  // namespace hwy
