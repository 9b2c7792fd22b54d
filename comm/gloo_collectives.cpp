// The gloo data plane's group collectives: a weighted ring allreduce and a chain broadcast among
// any sorted subset of ranks, in segments pipelined through the operation's staging memory.
#include "comm/gloo_mesh.hpp"

#include <algorithm>
#include <cstring>

namespace herd::comm::gloo_detail {

namespace {

// Elementwise kernels over the ring's segments; `weight` scales this rank's own values (1 leaves
// them bit for bit). `omp simd` (comm/ builds with -fopenmp-simd: the pragma only, no OpenMP
// runtime) because GCC 12 at -O2 vectorises only loops whose trip count it knows, and these run
// over every byte the ring receives. `out` may be `own` (in place): element i is read first.
void scale_into(float* to, const float* own, float weight, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    to[i] = weight * own[i];
}

void add_into(float* __restrict sum, const float* __restrict own, float weight, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i)
    sum[i] += weight * own[i];
}

void add_into_both(float* __restrict sum, const float* own, float weight, float* out,
                   std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    float total = sum[i] + weight * own[i];
    sum[i] = total;
    out[i] = total;
  }
}

void copy_floats(float* to, const float* from, std::size_t n) {
  if (n > 0)
    std::memcpy(to, from, n * sizeof(float));
}

// The 16-bit wire region after `count` staging floats, in floats.
std::size_t wire_floats(wire_format format, std::size_t count) {
  return format == wire_format::fp32 ? 0 : (count + 1) / 2;
}

// Where the ring's segments travel. fp32: the staging floats themselves. fp16 and bf16: a wire
// region of 16-bit values with staging's layout (after its `count` floats), so that every region
// is still received into once and sent from after, in the order the float ring uses; the sums
// themselves are taken in floats in staging.
class wire_view {
public:
  wire_view(wire_format format, float* staging, std::size_t count)
      : format_(format), staging_(staging),
        wire_(reinterpret_cast<std::uint16_t*>(staging + count)) {}

  bool rounded() const { return format_ != wire_format::fp32; }
  // The message memory of the segment at element `at`, and its size for `n` elements.
  void* at(std::size_t at) const {
    return rounded() ? static_cast<void*>(wire_ + at) : static_cast<void*>(staging_ + at);
  }
  std::size_t bytes(std::size_t n) const { return n * wire_bytes(format_); }
  // A received segment's floats into `to` (staging or the caller's output).
  void arrived(std::size_t at, std::size_t n, float* to) const {
    if (rounded())
      widen(format_, wire_ + at, to + at, n);
    else if (to != staging_)
      copy_floats(to + at, staging_ + at, n);
  }
  // Staging's floats of a segment onto the wire, rounded.
  void depart(std::size_t at, std::size_t n) const {
    if (rounded())
      narrow(format_, staging_ + at, wire_ + at, n);
  }

private:
  wire_format format_;
  float* staging_;
  std::uint16_t* wire_;
};

} // namespace

void gloo_mesh::reduce(const std::vector<weighted_input>& inputs, const float* send, float* out,
                       std::size_t count, const operation_options& options) {
  std::vector<int> ranks;
  float own_weight = 0.0f;
  for (const auto& input : inputs) {
    ranks.push_back(input.rank);
    if (input.rank == rank_)
      own_weight = input.weight;
  }
  const char* null_buffer = send == nullptr ? "send" : out == nullptr ? "out" : nullptr;
  int position = check_call("group_reduce", null_buffer, count, ranks, options.tag);
  if (ranks.size() == 1 || count == 0) {
    if (out != send || own_weight != 1.0f)
      scale_into(out, send, own_weight, count);
    return;
  }
  run("group_reduce (tag " + std::to_string(options.tag) + ", count " + std::to_string(count) +
          ", ranks " + describe(ranks) + ") on rank " + std::to_string(rank_),
      options, count + wire_floats(compression_, count),
      [&](operation& op) { ring_allreduce(op, send, own_weight, out, count, ranks, position); });
}

void gloo_mesh::broadcast_from(int root, float* data, std::size_t count,
                               const std::vector<int>& ranks, const operation_options& options) {
  int position =
      check_call("broadcast", data == nullptr ? "data" : nullptr, count, ranks, options.tag);
  auto root_at = std::find(ranks.begin(), ranks.end(), root);
  if (root_at == ranks.end())
    throw std::invalid_argument("broadcast on rank " + std::to_string(rank_) + ": root " +
                                std::to_string(root) + " is not in ranks " + describe(ranks));
  if (ranks.size() == 1 || count == 0)
    return;
  auto root_position = static_cast<int>(root_at - ranks.begin());
  run("broadcast (tag " + std::to_string(options.tag) + ", count " + std::to_string(count) +
          ", ranks " + describe(ranks) + ", root " + std::to_string(root) + ") on rank " +
          std::to_string(rank_),
      options, count,
      [&](operation& op) { chain_broadcast(op, data, count, ranks, position, root_position); });
}

// Ring allreduce (Patarasuk and Yuan 2009, as in Gloo's allreduce_ring_chunked and NCCL): k-1
// reduce-scatter steps leave rank position p with the sum of chunk p+1, k-1 allgather steps pass
// the sums around. Each rank sends 2(k-1)/k of the data, the optimum. Messages are segments, so a
// segment is added and forwarded while the next is still arriving.
//
// The caller's buffers are never handed to Gloo: segments arrive in `staging` (the layout of
// `send`) and this rank's weighted values are added to them there, and sends leave from staging.
// With a 16-bit wire format, segments travel rounded (wire_view) and each partial sum is rounded
// once as it leaves; a chunk's final sum is rounded once by its owner, which keeps the rounded
// value too, and passed on as those bytes: every rank ends with the same result, bit for bit.
void gloo_mesh::ring_allreduce(operation& op, const float* send, float weight, float* out,
                               std::size_t count, const std::vector<int>& ranks, int position) {
  const int k = static_cast<int>(ranks.size());
  const int p = position;
  auto chunk_at = [k](int c) { return ((c % k) + k) % k; };
  const int left = ranks[static_cast<std::size_t>(chunk_at(p - 1))];
  const int right = ranks[static_cast<std::size_t>(chunk_at(p + 1))];
  const partition parts{count, k};
  float* staging = op.staging();
  const wire_view wire(compression_, staging, count);
  const std::uint64_t tag = op.tag();
  // Steps 0..k-2 reduce-scatter, k-1..2k-3 allgather.
  auto slot = [tag](int step) { return slot_of(tag, operation_kind::allreduce, step); };

  // Every reduce-scatter receive lands in a chunk of its own, so all of them are posted now and
  // the left neighbour never waits for us to be ready.
  std::vector<std::vector<std::size_t>> scatter_receives(static_cast<std::size_t>(k - 1));
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step - 1);
    for (std::size_t s = 0; s < parts.segments(c); ++s)
      scatter_receives[static_cast<std::size_t>(step)].push_back(
          op.post_recv(left, slot(step), wire.at(parts.segment_begin(c, s)),
                       wire.bytes(parts.segment_size(c, s))));
  }
  std::vector<std::size_t> scatter_sends;
  std::vector<std::size_t> gather_sends;
  for (std::size_t s = 0; s < parts.segments(p); ++s) {
    auto at = parts.segment_begin(p, s);
    auto n = parts.segment_size(p, s);
    scale_into(staging + at, send + at, weight, n);
    wire.depart(at, n);
    scatter_sends.push_back(op.post_send(right, slot(0), wire.at(at), wire.bytes(n)));
  }
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step - 1);
    bool last = step == k - 2;
    for (std::size_t s = 0; s < parts.segments(c); ++s) {
      op.wait(scatter_receives[static_cast<std::size_t>(step)][s]);
      auto at = parts.segment_begin(c, s);
      auto n = parts.segment_size(c, s);
      wire.arrived(at, n, staging);
      if (!last) {
        add_into(staging + at, send + at, weight, n);
        wire.depart(at, n);
        scatter_sends.push_back(op.post_send(right, slot(step + 1), wire.at(at), wire.bytes(n)));
      } else {
        // Chunk p+1 is complete: it is this rank's result and the first allgather message.
        if (wire.rounded()) {
          add_into(staging + at, send + at, weight, n);
          wire.depart(at, n);
          wire.arrived(at, n, out); // the rounded sum, as every other rank will get it
        } else {
          add_into_both(staging + at, send + at, weight, out + at, n);
        }
        gather_sends.push_back(op.post_send(right, slot(k - 1), wire.at(at), wire.bytes(n)));
      }
    }
  }
  // The allgather receives land where reduce-scatter sends left from.
  for (auto index : scatter_sends)
    op.wait(index);
  std::vector<std::vector<std::size_t>> gather_receives(static_cast<std::size_t>(k - 1));
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step);
    for (std::size_t s = 0; s < parts.segments(c); ++s)
      gather_receives[static_cast<std::size_t>(step)].push_back(
          op.post_recv(left, slot(k - 1 + step), wire.at(parts.segment_begin(c, s)),
                       wire.bytes(parts.segment_size(c, s))));
  }
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step);
    for (std::size_t s = 0; s < parts.segments(c); ++s) {
      op.wait(gather_receives[static_cast<std::size_t>(step)][s]);
      auto at = parts.segment_begin(c, s);
      auto n = parts.segment_size(c, s);
      wire.arrived(at, n, out);
      if (step < k - 2)
        gather_sends.push_back(op.post_send(right, slot(k + step), wire.at(at), wire.bytes(n)));
    }
  }
  for (auto index : gather_sends)
    op.wait(index);
}

// Pipelined chain from the root along the ring of `ranks`: each rank forwards a segment as soon
// as it has it, so the time is about one transfer of the data plus one segment per hop.
void gloo_mesh::chain_broadcast(operation& op, float* data, std::size_t count,
                                const std::vector<int>& ranks, int position, int root_position) {
  const int k = static_cast<int>(ranks.size());
  auto at_position = [&](int q) { return ranks[static_cast<std::size_t>(((q % k) + k) % k)]; };
  const int hop = ((position - root_position) % k + k) % k; // 0 for the root
  const int previous = at_position(position - 1);
  const int next = at_position(position + 1);
  const bool forwards = hop < k - 1;
  const partition whole{count, 1};
  float* staging = op.staging();
  const std::uint64_t slot = slot_of(op.tag(), operation_kind::broadcast, 0);
  std::vector<std::size_t> sends;
  if (hop == 0) {
    for (std::size_t s = 0; s < whole.segments(0); ++s) {
      auto at = whole.segment_begin(0, s);
      auto n = whole.segment_size(0, s);
      copy_floats(staging + at, data + at, n);
      sends.push_back(op.post_send(next, slot, staging + at, n * sizeof(float)));
    }
  } else {
    std::vector<std::size_t> receives;
    for (std::size_t s = 0; s < whole.segments(0); ++s)
      receives.push_back(op.post_recv(previous, slot, staging + whole.segment_begin(0, s),
                                      whole.segment_size(0, s) * sizeof(float)));
    for (std::size_t s = 0; s < whole.segments(0); ++s) {
      op.wait(receives[s]);
      auto at = whole.segment_begin(0, s);
      auto n = whole.segment_size(0, s);
      copy_floats(data + at, staging + at, n);
      if (forwards)
        sends.push_back(op.post_send(next, slot, staging + at, n * sizeof(float)));
    }
  }
  for (auto index : sends)
    op.wait(index);
}

} // namespace herd::comm::gloo_detail
