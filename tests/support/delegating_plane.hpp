// A comm::data_plane that forwards every operation to another plane: test doubles derive from it
// and override only the operation they make fail (fault injection through the interface, as
// PyTorch c10d's tests override one virtual of a backend).
#pragma once

#include "comm/data_plane.hpp"

#include <memory>
#include <utility>

namespace herd::testing {

class delegating_plane : public comm::data_plane {
public:
  explicit delegating_plane(std::shared_ptr<comm::data_plane> inner) : inner_(std::move(inner)) {}

  std::string_view name() const override { return inner_->name(); }
  bool supports(comm::operation op) const override { return inner_->supports(op); }
  const kernels::memory& memory() const override { return inner_->memory(); }
  comm::status attach(int rank, const float* send_buffer, std::size_t count) override {
    return inner_->attach(rank, send_buffer, count);
  }
  comm::status detach(int rank) override { return inner_->detach(rank); }
  comm::status attach_marks(int rank, std::shared_ptr<const comm::gradient_marks> marks) override {
    return inner_->attach_marks(rank, std::move(marks));
  }
  std::shared_ptr<comm::work> group_reduce(const std::vector<comm::weighted_input>& inputs,
                                           const float* send, float* out, std::size_t count,
                                           const comm::operation_options& options) override {
    return inner_->group_reduce(inputs, send, out, count, options);
  }
  std::shared_ptr<comm::work> broadcast(float* data, std::size_t count,
                                        const std::vector<int>& ranks, int root,
                                        const comm::operation_options& options) override {
    return inner_->broadcast(data, count, ranks, root, options);
  }

private:
  std::shared_ptr<comm::data_plane> inner_;
};

/// A plane whose group reductions all end with `failure` at once; everything else reaches the
/// plane underneath.
class failing_reduce_plane final : public delegating_plane {
public:
  failing_reduce_plane(std::shared_ptr<comm::data_plane> inner, comm::status failure)
      : delegating_plane(std::move(inner)), failure_(std::move(failure)) {}
  std::shared_ptr<comm::work> group_reduce(const std::vector<comm::weighted_input>&, const float*,
                                           float*, std::size_t,
                                           const comm::operation_options&) override {
    return comm::ended_work(failure_);
  }

private:
  comm::status failure_;
};

} // namespace herd::testing
