// The gloo data plane's group collectives: a weighted ring allreduce and a chain broadcast among
// any sorted subset of ranks, in segments pipelined through the operation's staging memory.
#include "comm/gloo_mesh.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
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

// Error feedback: `residual` holds the rounded values of `sent` and becomes what rounding took
// from them. A value past the format's largest (saturated), or not finite, carries nothing: its
// residual would grow without bound.
void keep_loss(const float* sent, float* residual, float largest, std::size_t n) {
#pragma omp simd
  for (std::size_t i = 0; i < n; ++i) {
    const float lost = sent[i] - residual[i];
    residual[i] = std::fabs(sent[i]) <= largest && std::isfinite(lost) ? lost : 0.0f;
  }
}

void copy_floats(float* to, const float* from, std::size_t n) {
  if (n > 0)
    std::memcpy(to, from, n * sizeof(float));
}

// Where the segments of `parts` travel, in memory after the operation's `count` staging floats:
//   fp32, in the clear: the staging floats themselves;
//   fp16 and bf16: a region of 16-bit values with staging's layout, so that every region is still
//     received into once and sent from after, in the order the float ring uses (the sums
//     themselves are taken in floats, in staging);
//   sealed: those values (`plain`) are sealed into a region of messages of the same layout, each
//     segment followed by room for the overhead of a whole segment's pieces.
class wire_view {
public:
  wire_view(wire_format format, bool sealed, float* staging, const partition& parts)
      : format_(format), sealed_(sealed), parts_(parts), staging_(staging),
        wire_(reinterpret_cast<std::uint16_t*>(staging + parts.count)),
        messages_(reinterpret_cast<std::uint8_t*>(staging + parts.count +
                                                  rounded_floats(format, parts.count))) {}

  // The staging memory an operation over `parts` needs, in floats.
  static std::size_t staging_floats(wire_format format, bool sealed, const partition& parts) {
    std::size_t floats = parts.count + rounded_floats(format, parts.count);
    if (sealed)
      floats += (parts.count * wire_bytes(format) +
                 parts.total_segments() * segment_overhead(format) + sizeof(float) - 1) /
                sizeof(float);
    return floats;
  }

  bool rounded() const { return format_ != wire_format::fp32; }
  // Segment `s` of chunk `c` as a message.
  message_memory message(int c, std::size_t s) const {
    const std::size_t at = parts_.segment_begin(c, s);
    const std::size_t bytes = parts_.segment_size(c, s) * wire_bytes(format_);
    void* plain = rounded() ? static_cast<void*>(wire_ + at) : static_cast<void*>(staging_ + at);
    void* message = sealed_ ? messages_ + at * wire_bytes(format_) +
                                  parts_.ordinal(c, s) * segment_overhead(format_)
                            : plain;
    return {plain, message, bytes};
  }
  // A received segment's floats into `to` (staging or the caller's output).
  void arrived(int c, std::size_t s, float* to) const {
    const std::size_t at = parts_.segment_begin(c, s);
    const std::size_t n = parts_.segment_size(c, s);
    if (rounded())
      widen(format_, wire_ + at, to + at, n);
    else if (to != staging_)
      copy_floats(to + at, staging_ + at, n);
  }
  // Staging's floats of a segment onto the wire, rounded. With a `residual` (error feedback, by
  // element of the whole buffer): it is added to the floats first, and then holds what this
  // rounding lost.
  void depart(int c, std::size_t s, residual_blocks* residual = nullptr) const {
    if (!rounded())
      return;
    const std::size_t at = parts_.segment_begin(c, s);
    const std::size_t n = parts_.segment_size(c, s);
    if (residual == nullptr)
      return narrow(format_, staging_ + at, wire_ + at, n);
    // Block by block of the residual (the floats are rounded one by one: the bits are those of
    // the whole segment at once).
    for (std::size_t done = 0; done < n;) {
      const std::size_t element = parts_.offset + at + done;
      const std::size_t piece = std::min(n - done, residual_blocks::floats_from(element));
      float* lost = residual->at(element);
      float* floats = staging_ + at + done;
      std::uint16_t* wire = wire_ + at + done;
      add_into(floats, lost, 1.0f, piece);
      narrow(format_, floats, wire, piece);
      widen(format_, wire, lost, piece);
      keep_loss(floats, lost, format_ == wire_format::fp16 ? 65504.0f : FLT_MAX, piece);
      done += piece;
    }
  }

private:
  // The sealer's overhead of a full segment: room after every segment's message.
  static std::size_t segment_overhead(wire_format format) {
    return message_sealer::pieces(segment_floats * wire_bytes(format)) * message_sealer::overhead;
  }
  // The 16-bit region, in floats.
  static std::size_t rounded_floats(wire_format format, std::size_t count) {
    return format == wire_format::fp32 ? 0 : (count + 1) / 2;
  }

  wire_format format_;
  bool sealed_;
  partition parts_;
  float* staging_;
  std::uint16_t* wire_;
  std::uint8_t* messages_;
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
  if (const auto bad_part = part_error(count, options); !bad_part.empty())
    throw std::invalid_argument("group_reduce on rank " + std::to_string(rank_) + ": " + bad_part);
  if (ranks.size() == 1 || count == 0) {
    if (out != send || own_weight != 1.0f)
      scale_into(out, send, own_weight, count);
    return;
  }
  const partition parts{count, static_cast<int>(ranks.size()), options.whole_count,
                        options.part_offset};
  const std::string part = options.whole_count == 0
                               ? ""
                               : " at " + std::to_string(options.part_offset) + " of " +
                                     std::to_string(options.whole_count);
  run("group_reduce (tag " + std::to_string(options.tag) + ", count " + std::to_string(count) +
          part + ", ranks " + describe(ranks) + ") on rank " + std::to_string(rank_),
      options, wire_view::staging_floats(compression_, sealer_ != nullptr, parts),
      [&](operation& op) { ring_allreduce(op, send, own_weight, out, parts, position, ranks); });
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
      options,
      wire_view::staging_floats(wire_format::fp32, sealer_ != nullptr, partition{count, 1}),
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
                               const partition& parts, int position,
                               const std::vector<int>& ranks) {
  const int k = static_cast<int>(ranks.size());
  const int p = position;
  auto chunk_at = [k](int c) { return ((c % k) + k) % k; };
  const int left = ranks[static_cast<std::size_t>(chunk_at(p - 1))];
  const int right = ranks[static_cast<std::size_t>(chunk_at(p + 1))];
  float* staging = op.staging();
  const wire_view wire(compression_, sealer_ != nullptr, staging, parts);
  // Rounds a segment of staging onto the wire; with error feedback, through this rank's residual
  // (one per element of the whole buffer).
  auto depart = [&](int c, std::size_t s) {
    if (!error_feedback_)
      return wire.depart(c, s);
    const std::size_t whole = parts.whole == 0 ? parts.count : parts.whole;
    std::lock_guard<std::mutex> guard(residual_mutex_);
    residual_.use_for(whole);
    wire.depart(c, s, &residual_);
  };
  const std::uint64_t tag = op.tag();
  if (parts.most_segments() > 1)
    op.pipeline();
  // Steps 0..k-2 reduce-scatter, k-1..2k-3 allgather.
  auto slot = [tag](int step) { return slot_of(tag, operation_kind::allreduce, step); };

  // Every reduce-scatter receive lands in a chunk of its own, so all of them are posted now and
  // the left neighbour never waits for us to be ready.
  std::vector<std::vector<std::size_t>> scatter_receives(static_cast<std::size_t>(k - 1));
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step - 1);
    for (std::size_t s = 0; s < parts.segments(c); ++s)
      scatter_receives[static_cast<std::size_t>(step)].push_back(
          op.post_recv(left, slot(step), wire.message(c, s)));
  }
  std::vector<std::size_t> scatter_sends;
  std::vector<std::size_t> gather_sends;
  for (std::size_t s = 0; s < parts.segments(p); ++s) {
    auto at = parts.segment_begin(p, s);
    auto n = parts.segment_size(p, s);
    scale_into(staging + at, send + at, weight, n);
    depart(p, s);
    scatter_sends.push_back(op.post_send(right, slot(0), wire.message(p, s)));
  }
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step - 1);
    bool last = step == k - 2;
    for (std::size_t s = 0; s < parts.segments(c); ++s) {
      op.wait(scatter_receives[static_cast<std::size_t>(step)][s]);
      auto at = parts.segment_begin(c, s);
      auto n = parts.segment_size(c, s);
      wire.arrived(c, s, staging);
      if (!last) {
        add_into(staging + at, send + at, weight, n);
        depart(c, s);
        scatter_sends.push_back(op.post_send(right, slot(step + 1), wire.message(c, s)));
      } else {
        // Chunk p+1 is complete: it is this rank's result and the first allgather message.
        if (wire.rounded()) {
          add_into(staging + at, send + at, weight, n);
          depart(c, s);
          wire.arrived(c, s, out); // the rounded sum, as every other rank will get it
        } else {
          add_into_both(staging + at, send + at, weight, out + at, n);
        }
        gather_sends.push_back(op.post_send(right, slot(k - 1), wire.message(c, s)));
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
          op.post_recv(left, slot(k - 1 + step), wire.message(c, s)));
  }
  for (int step = 0; step < k - 1; ++step) {
    int c = chunk_at(p - step);
    for (std::size_t s = 0; s < parts.segments(c); ++s) {
      op.wait(gather_receives[static_cast<std::size_t>(step)][s]);
      wire.arrived(c, s, out);
      if (step < k - 2)
        gather_sends.push_back(op.post_send(right, slot(k + step), wire.message(c, s)));
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
  const wire_view wire(wire_format::fp32, sealer_ != nullptr, staging, whole);
  const std::uint64_t slot = slot_of(op.tag(), operation_kind::broadcast, 0);
  if (whole.segments(0) > 1)
    op.pipeline();
  std::vector<std::size_t> sends;
  if (hop == 0) {
    for (std::size_t s = 0; s < whole.segments(0); ++s) {
      copy_floats(staging + whole.segment_begin(0, s), data + whole.segment_begin(0, s),
                  whole.segment_size(0, s));
      sends.push_back(op.post_send(next, slot, wire.message(0, s)));
    }
  } else {
    std::vector<std::size_t> receives;
    for (std::size_t s = 0; s < whole.segments(0); ++s)
      receives.push_back(op.post_recv(previous, slot, wire.message(0, s)));
    for (std::size_t s = 0; s < whole.segments(0); ++s) {
      op.wait(receives[s]);
      wire.arrived(0, s, data);
      if (forwards)
        sends.push_back(op.post_send(next, slot, wire.message(0, s)));
    }
  }
  for (auto index : sends)
    op.wait(index);
}

} // namespace herd::comm::gloo_detail
