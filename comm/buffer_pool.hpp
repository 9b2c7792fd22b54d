// Reusable result buffers for reductions. Touching fresh memory is slow on cloud VMs (about
// 0.35 GB/s for first-touch page faults, against 13 GB/s for memcpy into touched memory), so a
// round's result goes into a buffer that earlier rounds already touched.
#pragma once

#include "herd/memory.hpp"

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace herd::comm {

/// A round's result: floats in host or device memory (see include/herd/memory.hpp).
using shared_buffer = std::shared_ptr<kernels::buffer<float>>;

/// A host buffer holding a copy of `values`, outside any pool (tests, one-off results).
shared_buffer host_buffer(const std::vector<float>& values);

class buffer_pool : public std::enable_shared_from_this<buffer_pool> {
public:
  /// Pools hand out buffers of `count` floats in `where` (a GPU's memory for workers on a GPU).
  static std::shared_ptr<buffer_pool> create(std::size_t count,
                                             const kernels::memory& where = kernels::host_memory());

  /// A buffer of count() floats with unspecified contents. It goes back to the pool when the last
  /// reference to it is dropped (or is freed, if the pool is gone by then).
  shared_buffer acquire();

  std::size_t count() const { return count_; }
  const kernels::memory& where() const { return *memory_; }
  /// Buffers ever allocated, and those idle in the pool now.
  std::size_t allocated() const;
  std::size_t idle() const;

  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;
  ~buffer_pool();

private:
  buffer_pool(std::size_t count, const kernels::memory& where) : count_(count), memory_(&where) {}
  void give_back(kernels::buffer<float>* buffer);

  std::size_t count_;
  const kernels::memory* memory_;
  mutable std::mutex mutex_;
  std::vector<kernels::buffer<float>*> idle_;
  std::size_t allocated_ = 0;
};

} // namespace herd::comm
