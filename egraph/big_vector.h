#pragma once
// std::vector for the e-graph's large flat arrays, backed by transparent huge pages. E-matching,
// hash-consing and rebuilding touch these arrays at random; with 4 KiB pages most of those
// touches also miss the TLB. Asking for 2 MiB pages (madvise, where the kernel allows it) cut
// the AC saturation benchmark's CPU time by about a third. Small arrays use malloc as usual.
#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <vector>

namespace eqfuse::egraph {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t(2) << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < 2 * kHuge) {
      if (void* p = std::malloc(bytes)) return static_cast<T*>(p);
      throw std::bad_alloc();
    }
    bytes = (bytes + kHuge - 1) & ~(kHuge - 1);
    void* p = std::aligned_alloc(kHuge, bytes);
    if (!p) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // advisory: fine if the kernel says no
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace eqfuse::egraph
