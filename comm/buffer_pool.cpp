// Recycling result buffers; see buffer_pool.hpp.
#include "comm/buffer_pool.hpp"

namespace herd::comm {

shared_buffer host_buffer(const std::vector<float>& values) {
  auto buffer = std::make_shared<kernels::buffer<float>>();
  buffer->assign(values);
  return buffer;
}

std::shared_ptr<buffer_pool> buffer_pool::create(std::size_t count, const kernels::memory& where) {
  return std::shared_ptr<buffer_pool>(new buffer_pool(count, where));
}

shared_buffer buffer_pool::acquire() {
  kernels::buffer<float>* buffer = nullptr;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!idle_.empty()) {
      buffer = idle_.back();
      idle_.pop_back();
    } else {
      ++allocated_;
    }
  }
  if (buffer == nullptr) { // touched now, not inside the first reduction that writes it
    buffer = new kernels::buffer<float>(count_, *memory_);
    memory_->zero(buffer->data(), count_ * sizeof(float));
  }
  std::weak_ptr<buffer_pool> pool = weak_from_this();
  return shared_buffer(buffer, [pool](kernels::buffer<float>* returned) {
    if (auto owner = pool.lock())
      owner->give_back(returned);
    else
      delete returned;
  });
}

void buffer_pool::give_back(kernels::buffer<float>* buffer) {
  std::lock_guard<std::mutex> guard(mutex_);
  idle_.push_back(buffer);
}

std::size_t buffer_pool::allocated() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return allocated_;
}

std::size_t buffer_pool::idle() const {
  std::lock_guard<std::mutex> guard(mutex_);
  return idle_.size();
}

buffer_pool::~buffer_pool() {
  for (auto* buffer : idle_)
    delete buffer;
}

} // namespace herd::comm
