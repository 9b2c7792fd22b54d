// The nccl data plane-> On every machine: the unique id as bytes, and a clear failure without a
// device (or "built without NCCL"). With one GPU: a one-rank communicator reduces correctly through
// both paths (the exchange and ncclAllReduce) on seeded random inputs of odd sizes, bad calls fail
// alone, two ranks on one GPU are refused, and the watchdog turns a hung initialisation (a peer
// that never joins) and a stalled stream into errors. With two or more GPUs: one process per GPU,
// groups of every size, subsets that leave ranks out, and a peer that never calls.
//
// The same file, built with HERD_NCCL_RANK_PROGRAM, is comm_nccl_plane_rank: the program each
// forked rank process runs (fork and exec, so every rank starts with a fresh CUDA runtime: CUDA
// cannot be used in a child forked after the parent touched it). Scenarios that could hang also run
// there, so that the test can bound them and report a hang as a failure.
#include "comm/nccl_plane.hpp"
#include "comm/wire_format.hpp"
#include "kernels/cuda/cuda_ops.hpp"

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#ifdef HERD_TEST_WITH_NCCL
#include <cuda_runtime.h>
#endif

#ifndef HERD_NCCL_RANK_PROGRAM
#include <csignal>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/temp_directory.hpp"
#endif

#include "support/comm_outcome.hpp"
#include "support/cuda_skip.hpp"
#include "support/random_values.hpp"

namespace {

using herd::comm::comm_error;
using herd::comm::full_group_algorithm;
using herd::comm::make_nccl_plane;
using herd::comm::make_nccl_unique_id;
using herd::comm::nccl_plane;
using herd::comm::nccl_plane_options;
using herd::comm::nccl_unique_id;
using herd::comm::outcome;
using herd::comm::weighted_input;
using herd::comm::wire_format;
using namespace std::chrono_literals;

// ---- shared by the tests and the rank program ---------------------------------------------------

// The id on a command line.
[[maybe_unused]] std::string to_hex(const nccl_unique_id& id) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (char byte : id.bytes) {
    const auto value = static_cast<unsigned char>(byte);
    text += digits[value >> 4];
    text += digits[value & 15];
  }
  return text;
}

[[maybe_unused]] nccl_unique_id from_hex(std::string_view text) {
  if (text.size() != 2 * nccl_unique_id::size_bytes)
    throw std::invalid_argument("a hex unique id has " +
                                std::to_string(2 * nccl_unique_id::size_bytes) + " digits, got " +
                                std::to_string(text.size()));
  auto nibble = [](char digit) {
    if (digit >= '0' && digit <= '9')
      return digit - '0';
    if (digit >= 'a' && digit <= 'f')
      return digit - 'a' + 10;
    throw std::invalid_argument(std::string("not a hex digit: ") + digit);
  };
  std::string bytes;
  for (std::size_t i = 0; i < text.size(); i += 2)
    bytes += static_cast<char>(nibble(text[i]) * 16 + nibble(text[i + 1]));
  return nccl_unique_id::from_bytes(bytes);
}

#ifdef HERD_TEST_WITH_NCCL

[[maybe_unused]] const char* algorithm_name(full_group_algorithm algorithm) {
  return algorithm == full_group_algorithm::allreduce ? "allreduce" : "exchange";
}

// The values rank `rank` contributes to reduction `step`: distinct for every (step, rank).
std::vector<float> contribution(std::size_t count, std::size_t step, int rank) {
  return herd::testing::random_values(count, 7919u * step + static_cast<std::uint64_t>(rank) + 3u);
}

// "" when `got` is sum_i weight_i * contribution(count, step, rank_i), computed in double, within
// `relative` times sum_i |weight_i * x_i| (so cancellation cannot hide an error) plus `absolute`;
// otherwise the first element that is not, in words.
std::string check_weighted_sum(const std::vector<float>& got, std::size_t step,
                               const std::vector<weighted_input>& inputs, double relative,
                               double absolute) {
  std::vector<double> sum(got.size(), 0.0);
  std::vector<double> magnitude(got.size(), 0.0);
  for (const auto& input : inputs) {
    const auto values = contribution(got.size(), step, input.rank);
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double term = static_cast<double>(input.weight) * values[i];
      sum[i] += term;
      magnitude[i] += std::abs(term);
    }
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - sum[i]) <= relative * magnitude[i] + absolute))
      return "element " + std::to_string(i) + " of " + std::to_string(got.size()) + " is " +
             std::to_string(got[i]) + ", the double-precision weighted sum is " +
             std::to_string(sum[i]);
  return {};
}

std::string describe(const std::vector<weighted_input>& inputs) {
  std::string text = "[";
  for (std::size_t i = 0; i < inputs.size(); ++i)
    text += (i == 0 ? "" : ", ") + std::to_string(inputs[i].rank);
  return text + "]";
}

// One reduction of the multi-process schedule.
struct reduction_step {
  std::vector<weighted_input> inputs;
  std::size_t count = 0;
  bool in_place = false;
};

[[maybe_unused]] bool has_member(const reduction_step& step, int rank) {
  return std::any_of(step.inputs.begin(), step.inputs.end(),
                     [rank](const weighted_input& input) { return input.rank == rank; });
}

// What every rank of a `size`-rank communicator runs, in this order (each rank the steps it is a
// member of: members meet in the same order, as NCCL needs). Groups of every size, subsets that
// leave ranks out, disjoint groups side by side, inputs not sorted by rank, in place.
[[maybe_unused]] std::vector<reduction_step> schedule(int size) {
  std::vector<reduction_step> steps;
  auto everyone = [size](bool reversed) {
    std::vector<weighted_input> inputs;
    for (int r = 0; r < size; ++r) {
      const int rank = reversed ? size - 1 - r : r;
      // Staleness-aware weights exp(-0.5 s), s = rank, normalised below.
      inputs.push_back({rank, std::exp(-0.5f * static_cast<float>(rank))});
    }
    float total = 0.0f;
    for (const auto& input : inputs)
      total += input.weight;
    for (auto& input : inputs)
      input.weight /= total;
    return inputs;
  };
  steps.push_back({everyone(false), 1000003, false}); // more than 4 MB, odd
  steps.push_back({{{0, 0.75f}, {1, 0.25f}}, 4099, false});
  if (size >= 3) {
    steps.push_back({{{0, 0.5f}, {2, 0.5f}}, 7, false}); // leaves rank 1 (and others) out
    steps.push_back({{{1, 1.0f}}, 7, false});            // rank 1 alone meanwhile
    steps.push_back({{{2, 0.3f}, {1, 0.3f}, {0, 0.4f}}, 33, true});
  } else {
    steps.push_back({{{0, 1.0f}}, 7, false}); // each rank alone: the other is left out
    steps.push_back({{{1, 2.0f}}, 7, false});
  }
  if (size >= 4) {
    steps.push_back({{{1, 0.5f}, {3, 0.5f}}, 1000, false}); // two disjoint pairs
    steps.push_back({{{0, 0.5f}, {2, 0.5f}}, 1000, false});
  }
  steps.push_back({everyone(true), 130, true});
  return steps;
}

// Device memory for the checks, straight from the CUDA runtime (setup and checks, not a hot path).
class gpu_floats {
public:
  explicit gpu_floats(const std::vector<float>& values) : size_(values.size()) {
    check(cudaMalloc(&data_, std::max<std::size_t>(1, size_) * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(data_, values.data(), size_ * sizeof(float), cudaMemcpyHostToDevice),
          "cudaMemcpy to the device");
  }
  ~gpu_floats() { (void)cudaFree(data_); }
  gpu_floats(const gpu_floats&) = delete;
  gpu_floats& operator=(const gpu_floats&) = delete;

  float* data() const { return static_cast<float*>(data_); }
  std::vector<float> download() const {
    std::vector<float> values(size_);
    check(cudaMemcpy(values.data(), data_, size_ * sizeof(float), cudaMemcpyDeviceToHost),
          "cudaMemcpy to the host");
    return values;
  }

private:
  static void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
      throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// How far a reduction on `format` may be from the exact weighted sum of `ranks` members, relative
// to the sum of magnitudes: fp32 sums with float rounding; a 16-bit wire rounds each member's
// values once and, in NCCL's allreduce, every partial sum once more (a unit roundoff each, or
// half of fp16's smallest step among its subnormals, 2^-24).
std::pair<double, double> tolerance(wire_format format, std::size_t ranks) {
  if (format == wire_format::fp32)
    return {1e-5, 0.0};
  const double roundings = static_cast<double>(ranks + 1);
  const double unit = format == wire_format::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  return {unit * roundings, std::ldexp(1.0, -24) * roundings};
}

// Runs one reduction step on `plane` with this rank's contribution; "" or the problem in words.
std::string run_step(nccl_plane& plane, const reduction_step& step, std::size_t step_index,
                     wire_format format = wire_format::fp32) {
  const auto own = contribution(step.count, step_index, plane.rank());
  gpu_floats send(own);
  gpu_floats separate_out(std::vector<float>(step.count, std::nanf("")));
  float* out = step.in_place ? send.data() : separate_out.data();
  auto work = plane.group_reduce(step.inputs, send.data(), out, step.count, {});
  const auto result = work->wait(std::chrono::minutes(2));
  if (!work->is_completed())
    return "step " + std::to_string(step_index) + " among " + describe(step.inputs) +
           " did not end within 2 minutes";
  if (!result.ok())
    return "step " + std::to_string(step_index) + " failed: " + result.message();
  const auto got = step.in_place ? send.download() : separate_out.download();
  const auto [relative, absolute] = tolerance(format, step.inputs.size());
  auto problem = check_weighted_sum(got, step_index, step.inputs, relative, absolute);
  if (!problem.empty())
    return "step " + std::to_string(step_index) + " among " + describe(step.inputs) + " (" +
           std::to_string(step.count) + " floats" + (step.in_place ? ", in place" : "") +
           "): " + problem;
  return {};
}

#endif // HERD_TEST_WITH_NCCL

} // namespace

#ifdef HERD_NCCL_RANK_PROGRAM

// ---- comm_nccl_plane_rank: one rank of a multi-process test -------------------------------------
//
//   comm_nccl_plane_rank reduce <rank> <size> <hex id> <allreduce|exchange> [none|fp16|bf16]
//   comm_nccl_plane_rank peer_never_calls <rank> <hex id> <directory>
//   comm_nccl_plane_rank init_without_peer
//   comm_nccl_plane_rank stalled_stream
// Exit status 0 when the rank saw what it should; otherwise it prints why and exits 1.

namespace {

#ifdef HERD_TEST_WITH_NCCL

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int fail(const std::string& why) {
  std::cout << "FAILED: " << why << std::endl;
  return 1;
}

int reduce(int rank, int size, const nccl_unique_id& id, full_group_algorithm algorithm,
           wire_format format) {
  // The rank's own GPU for everything it allocates here, as a node's worker has; the plane
  // switches to options.device only within its own calls.
  if (const auto status = cudaSetDevice(rank); status != cudaSuccess)
    return fail("rank " + std::to_string(rank) + ": cudaSetDevice: " +
                cudaGetErrorString(status));
  nccl_plane_options options;
  options.device = rank;
  options.timeout = std::chrono::seconds(60);
  options.full_group = algorithm;
  options.compression = format;
  auto plane = make_nccl_plane(rank, size, id, options);
  const auto steps = schedule(size);
  int done = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (!has_member(steps[i], rank))
      continue;
    if (auto problem = run_step(*plane, steps[i], i, format); !problem.empty())
      return fail("rank " + std::to_string(rank) + ": " + problem);
    ++done;
  }
  std::cout << "rank " << rank << ": " << done << " reductions correct" << std::endl;
  return 0;
}

// Rank 0 reduces with rank 1, which never calls: the watchdog must end it with the timeout, abort
// the communicator, and fail the next call at once. Rank 1 waits for rank 0's verdict (a file),
// then closes its plane, whose finalisation cannot complete either: it must still return.
int peer_never_calls(int rank, const nccl_unique_id& id, const std::string& directory) {
  const std::string verdict_file = directory + "/rank0-finished";
  nccl_plane_options options;
  options.device = rank;
  options.timeout = std::chrono::seconds(3);
  {
    auto plane = make_nccl_plane(rank, 2, id, options);
    if (rank == 1) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(3);
      while (!std::filesystem::exists(verdict_file) && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (!std::filesystem::exists(verdict_file))
        return fail("rank 1: rank 0 never finished");
      std::cout << "rank 1: closing its plane" << std::endl;
    } else {
      gpu_floats send(contribution(1000, 0, 0));
      gpu_floats out(std::vector<float>(1000, 0.0f));
      const std::vector<weighted_input> inputs{{0, 0.5f}, {1, 0.5f}};
      auto work = plane->group_reduce(inputs, send.data(), out.data(), 1000, {});
      const auto result = work->wait(std::chrono::minutes(2));
      std::ofstream(verdict_file) << "done\n";
      if (!work->is_completed())
        return fail("rank 0: the reduction with a silent peer did not end within 2 minutes");
      if (result.kind() != outcome::timeout)
        return fail(std::string("rank 0: the silent peer's reduction ended ") +
                    to_string(result.kind()) + ", not timeout");
      const std::string& error = result.message();
      std::cout << "rank 0: " << error << std::endl;
      if (!contains(error, "nccl rank 0 of 2 (device 0): group reduction among ranks [0, 1] "
                           "(1000 floats) did not finish within 3000 ms") ||
          !contains(error, "the communicator was aborted"))
        return fail("rank 0: unexpected error: '" + error + "'");
      if (!plane->aborted() || plane->abort_reason() != error)
        return fail("rank 0: the plane does not say it was aborted with that error");
      auto again = plane->group_reduce(inputs, send.data(), out.data(), 1000, {});
      const auto again_result = again->wait(std::chrono::milliseconds(0));
      if (!again->is_completed() || again_result.message() != error ||
          again_result.kind() != outcome::aborted)
        return fail("rank 0: a call after the abort did not fail at once with the same error: '" +
                    again_result.message() + "'");
    }
  }
  std::cout << "rank " << rank << ": plane closed" << std::endl;
  return 0;
}

// Rank 0 of 2 on device 0, whose peer never joins: the initialisation hangs in NCCL's bootstrap
// until the watchdog aborts it. One GPU suffices.
int init_without_peer() {
  const auto id = make_nccl_unique_id(); // its bootstrap root lives in this process
  nccl_plane_options options;
  options.timeout = std::chrono::seconds(3);
  try {
    auto plane = make_nccl_plane(0, 2, id, options);
  } catch (const comm_error& error) {
    const std::string message = error.what();
    std::cout << "initialisation failed: " << message << std::endl;
    if (message != "nccl rank 0 of 2 (device 0): communicator initialisation did not finish "
                   "within 3000 ms; the communicator was aborted")
      return fail("unexpected message");
    return 0;
  }
  return fail("a communicator of 2 ranks initialised with one rank");
}

// Holds a stream until opened (bounded, so a failed test cannot stall the device forever).
class gate {
public:
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }
  static void CUDART_CB hold(void* self) {
    auto& g = *static_cast<gate*>(self);
    std::unique_lock<std::mutex> lock(g.mutex_);
    g.opened_.wait_for(lock, std::chrono::minutes(2), [&g] { return g.open_; });
  }

private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// A one-rank reduction queued behind a host function that holds the plane's stream cannot finish
// in time: the watchdog must turn it into the timeout error, abort the communicator, and fail the
// next call at once. One GPU suffices.
int stalled_stream() {
  gate held;
  nccl_plane_options options;
  options.timeout = std::chrono::seconds(2);
  auto plane = make_nccl_plane(0, 1, make_nccl_unique_id(), options);
  gpu_floats send(contribution(1000, 0, 0));
  gpu_floats out(std::vector<float>(1000, 0.0f));
  auto stream = static_cast<cudaStream_t>(plane->stream());
  if (cudaLaunchHostFunc(stream, &gate::hold, &held) != cudaSuccess)
    return fail("cudaLaunchHostFunc failed");
  // The stream runs again 6 s from now, past the deadline, whatever this thread is doing: the
  // abort may itself wait for the stream (NCCL frees device memory), and so may NCCL's queueing
  // of the reduction inside group_reduce. The work must end once the stream runs again.
  const auto queued = std::chrono::steady_clock::now();
  const auto seconds_since_queued = [queued] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - queued).count();
  };
  std::thread opener([&held] {
    std::this_thread::sleep_for(std::chrono::seconds(6));
    held.open();
  });
  struct joined {
    std::thread& thread;
    ~joined() { thread.join(); }
  } join_opener{opener};
  const std::vector<weighted_input> inputs{{0, 1.0f}};
  auto work = plane->group_reduce(inputs, send.data(), out.data(), 1000, {});
  const double returned_after = seconds_since_queued();
  std::cout << "group_reduce returned after " << returned_after << " s" << std::endl;
  // Queueing does not wait for the stream: the watchdog can act while the stream is held. (When
  // the weighted-sum kernel was first loaded here, at this call, it waited the whole 6 s.)
  if (returned_after >= 5.0)
    return fail("group_reduce waited for the held stream");
  const auto result = work->wait(std::chrono::minutes(2));
  std::cout << "the reduction ended after " << seconds_since_queued() << " s" << std::endl;
  if (!work->is_completed())
    return fail("the stalled reduction did not end within 2 minutes of the stream's release");
  if (result.kind() != outcome::timeout)
    return fail(std::string("the stalled reduction ended ") + to_string(result.kind()) +
                ", not timeout");
  const std::string& error = result.message();
  std::cout << "stalled reduction: " << error << std::endl;
  if (!contains(error, "nccl rank 0 of 1 (device 0): group reduction among ranks [0] (1000 floats) "
                       "did not finish within 2000 ms") ||
      !contains(error, "the communicator was aborted"))
    return fail("unexpected error: '" + error + "'");
  auto again = plane->group_reduce(inputs, send.data(), out.data(), 1000, {});
  const auto again_result = again->wait(std::chrono::milliseconds(0));
  if (!again->is_completed() || again_result.message() != error ||
      again_result.kind() != outcome::aborted)
    return fail("a call after the abort did not fail at once with the same error: '" +
                again_result.message() + "'");
  return 0;
}

#endif // HERD_TEST_WITH_NCCL

int run(const std::vector<std::string>& args) {
#ifdef HERD_TEST_WITH_NCCL
  const std::string scenario = args.empty() ? "" : args[0];
  if (scenario == "reduce" && (args.size() == 5 || args.size() == 6))
    return reduce(std::stoi(args[1]), std::stoi(args[2]), from_hex(args[3]),
                  args[4] == "exchange" ? full_group_algorithm::exchange
                                        : full_group_algorithm::allreduce,
                  args.size() == 6 ? herd::comm::wire_format_of(args[5]) : wire_format::fp32);
  if (scenario == "peer_never_calls" && args.size() == 4)
    return peer_never_calls(std::stoi(args[1]), from_hex(args[2]), args[3]);
  if (scenario == "init_without_peer" && args.size() == 1)
    return init_without_peer();
  if (scenario == "stalled_stream" && args.size() == 1)
    return stalled_stream();
  std::cout << "usage: see the top of nccl_plane_test.cpp's rank program" << std::endl;
  return 2;
#else
  (void)args;
  std::cout << "built without NCCL" << std::endl;
  return 2;
#endif
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& error) {
    std::cout << "FAILED with an exception: " << error.what() << std::endl;
    return 1;
  }
}

#else // the tests

#ifdef HERD_TEST_WITH_NCCL
namespace herd::comm {
// How GoogleTest prints the parameter (test lists, ctest names).
void PrintTo(full_group_algorithm algorithm, std::ostream* out) {
  *out << (algorithm == full_group_algorithm::allreduce ? "allreduce" : "exchange");
}
} // namespace herd::comm
#endif

namespace {

using herd::kernels::cuda::cuda_device_available;
using herd::kernels::cuda::query_devices;
using testing::HasSubstr;

TEST(nccl_unique_id, travels_as_exactly_its_bytes) {
  nccl_unique_id id;
  for (std::size_t i = 0; i < id.bytes.size(); ++i)
    id.bytes[i] = static_cast<char>(i * 37 + 1); // includes zero bytes
  const std::string bytes = id.to_bytes();
  ASSERT_EQ(bytes.size(), 128u);
  EXPECT_EQ(nccl_unique_id::from_bytes(bytes), id);
  EXPECT_EQ(from_hex(to_hex(id)), id);
  nccl_unique_id other = id;
  other.bytes[127] = static_cast<char>(other.bytes[127] + 1);
  EXPECT_NE(other, id);
  try {
    nccl_unique_id::from_bytes(bytes.substr(1));
    FAIL() << "an id of 127 bytes was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), HasSubstr("has 128 bytes, got 127"));
  }
}

TEST(nccl_plane, works_with_a_device_or_fails_clearly_without_one) {
#ifdef HERD_TEST_WITH_NCCL
  if (cuda_device_available()) {
    auto plane = make_nccl_plane(0, 1, make_nccl_unique_id(), nccl_plane_options{});
    EXPECT_EQ(plane->rank(), 0);
    EXPECT_EQ(plane->size(), 1);
    EXPECT_EQ(plane->device(), 0);
    EXPECT_NE(plane->stream(), nullptr);
    EXPECT_FALSE(plane->aborted());
    // What the data-plane interface asks: it reduces device memory, and nothing else.
    EXPECT_EQ(plane->name(), "nccl");
    EXPECT_TRUE(plane->supports(herd::comm::operation::group_reduce));
    EXPECT_FALSE(plane->supports(herd::comm::operation::broadcast));
    EXPECT_FALSE(plane->supports(herd::comm::operation::attach));
    EXPECT_EQ(plane->memory().name(), "cuda:0");
    const auto copied = plane->broadcast(nullptr, 0, {0}, 0, {})->wait(0ms);
    EXPECT_EQ(copied.kind(), outcome::unsupported);
    EXPECT_EQ(copied.message(), "nccl plane does not support broadcast");
    return;
  }
  // NCCL makes an id without a GPU (its bootstrap is plain sockets); the plane needs the device.
  const auto id = make_nccl_unique_id();
  EXPECT_NE(id, nccl_unique_id{});
  try {
    auto plane = make_nccl_plane(0, 1, id, nccl_plane_options{});
    FAIL() << "an nccl_plane started without a device (" << query_devices().unavailable_reason
           << ')';
  } catch (const comm_error& error) {
    EXPECT_EQ(error.kind(), outcome::failed);
    EXPECT_THAT(error.what(), HasSubstr("nccl rank 0 of 1 (device 0): cannot use CUDA device 0"));
    EXPECT_THAT(error.what(), HasSubstr("CUDA error"));
  }
#else
  try {
    make_nccl_unique_id();
    FAIL() << "make_nccl_unique_id() worked in a build without NCCL";
  } catch (const comm_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("make_nccl_unique_id: built without NCCL"));
  }
  try {
    auto plane = make_nccl_plane(0, 1, nccl_unique_id{}, nccl_plane_options{});
    FAIL() << "an nccl_plane started in a build without NCCL";
  } catch (const comm_error& error) {
    EXPECT_EQ(error.kind(), outcome::unsupported);
    EXPECT_THAT(error.what(), HasSubstr("nccl_plane: built without NCCL"));
  }
#endif
}

#ifdef HERD_TEST_WITH_NCCL

TEST(nccl_plane, refuses_a_bad_rank_or_size_before_touching_the_device) {
  EXPECT_THROW(make_nccl_plane(2, 2, nccl_unique_id{}, nccl_plane_options{}),
               std::invalid_argument);
  EXPECT_THROW(make_nccl_plane(0, 0, nccl_unique_id{}, nccl_plane_options{}),
               std::invalid_argument);
  nccl_plane_options no_time;
  no_time.timeout = 0ms;
  EXPECT_THROW(make_nccl_plane(0, 1, nccl_unique_id{}, no_time), std::invalid_argument);
}

// ---- one GPU ------------------------------------------------------------------------------------

class one_rank_communicator : public testing::TestWithParam<full_group_algorithm> {
protected:
  nccl_plane_options options() const {
    nccl_plane_options chosen;
    chosen.timeout = std::chrono::seconds(60);
    chosen.full_group = GetParam();
    return chosen;
  }
};

// A group of one is the whole communicator: `exchange` sends nothing and runs the weighted sum;
// `allreduce` scales into scratch and runs ncclAllReduce on the one rank.
TEST_P(one_rank_communicator, reduces_correctly_on_odd_sizes_and_in_place) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  auto plane = make_nccl_plane(0, 1, make_nccl_unique_id(), options());
  std::size_t step = 0;
  for (std::size_t count : {1u, 7u, 33u, 130u, 4099u, 1000003u}) {
    for (bool in_place : {false, true}) {
      reduction_step reduction{{{0, 0.3f + 0.1f * static_cast<float>(step % 5)}}, count, in_place};
      EXPECT_EQ(run_step(*plane, reduction, step), "")
          << algorithm_name(GetParam()) << ", count " << count << (in_place ? ", in place" : "");
      ++step;
    }
  }
  EXPECT_FALSE(plane->aborted()) << plane->abort_reason();
}

TEST_P(one_rank_communicator, bad_calls_fail_alone_and_the_communicator_keeps_working) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  auto plane = make_nccl_plane(0, 1, make_nccl_unique_id(), options());
  gpu_floats send(contribution(100, 0, 0));
  gpu_floats out(std::vector<float>(100, 0.0f));
  std::vector<float> host(100, 1.0f);
  struct bad_call {
    std::vector<weighted_input> inputs;
    const float* send;
    float* out;
    std::size_t count;
    std::string says;
  };
  const std::vector<bad_call> calls{
      {{}, send.data(), out.data(), 100, "inputs is empty; it must list this rank 0"},
      {{{0, 1.0f}, {1, 1.0f}},
       send.data(),
       out.data(),
       100,
       "rank 1 in [0, 1] is outside the communicator of 1 ranks"},
      {{{0, 1.0f}, {0, 1.0f}}, send.data(), out.data(), 100, "rank 0 appears twice in [0, 0]"},
      {{{-1, 1.0f}}, send.data(), out.data(), 100, "rank -1 in [-1] is outside"},
      {{{0, 1.0f}}, host.data(), out.data(), 100, "send is not device memory"},
      {{{0, 1.0f}}, send.data(), host.data(), 100, "out is not device memory"},
      {{{0, 1.0f}},
       nullptr,
       out.data(),
       100,
       "send and out must be device buffers of 100 floats, but one is null"},
      {{{0, 1.0f}}, send.data(), send.data() + 1, 100, "out overlaps send"},
  };
  for (const auto& call : calls) {
    auto work = plane->group_reduce(call.inputs, call.send, call.out, call.count, {});
    EXPECT_TRUE(work->is_completed());
    EXPECT_EQ(work->wait(0ms).kind(), outcome::invalid_argument);
    EXPECT_THAT(work->wait(0ms).message(),
                HasSubstr("nccl rank 0 of 1 (device 0): group_reduce: " + call.says));
  }
  EXPECT_FALSE(plane->aborted()) << plane->abort_reason();
  auto nothing = plane->group_reduce({{0, 1.0f}}, nullptr, nullptr, 0, {});
  EXPECT_TRUE(nothing->is_completed());
  EXPECT_EQ(nothing->wait(0ms).message(), "");
  EXPECT_EQ(run_step(*plane, reduction_step{{{0, 2.0f}}, 100, false}, 0), "");
}

// ---- a 16-bit wire, one GPU ------------------------------------------------------------------

// Values a 16-bit wire must get right: random ones of magnitudes from 2^-30 to 2^20 (past fp16's
// range), halfway cases of both formats, fp16's largest and just past it, subnormals, infinities.
std::vector<float> awkward_values(std::size_t count) {
  auto values = herd::testing::random_values(count, 2718u);
  for (std::size_t i = 0; i < count; ++i)
    values[i] = std::ldexp(values[i], static_cast<int>(i % 51) - 30);
  const std::vector<float> edges{1.0f + std::ldexp(1.0f, -8),
                                 1.0f + std::ldexp(1.0f, -11),
                                 1.0f + 3 * std::ldexp(1.0f, -11),
                                 65504.0f,
                                 65519.0f,
                                 -65520.0f,
                                 1e30f,
                                 std::ldexp(1.0f, -20),
                                 -std::ldexp(1.0f, -130),
                                 INFINITY,
                                 -INFINITY,
                                 FLT_MAX};
  std::copy(edges.begin(), edges.end(), values.begin());
  return values;
}

// The CPU's rounding of weight * values (plus `residual`, then updated, when given), element by
// element as the Gloo plane does it: what the device must give, bit for bit.
std::vector<float> rounded_on_the_cpu(wire_format format, const std::vector<float>& values,
                                      float weight, std::vector<float>* residual) {
  const float largest = format == wire_format::fp16 ? 65504.0f : FLT_MAX;
  std::vector<float> rounded(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    float x = weight * values[i];
    if (residual != nullptr)
      x += (*residual)[i];
    std::uint16_t bits = 0;
    herd::comm::narrow_portable(format, &x, &bits, 1);
    herd::comm::widen_portable(format, &bits, &rounded[i], 1);
    if (residual != nullptr) {
      const float lost = x - rounded[i];
      (*residual)[i] = std::fabs(x) <= largest && std::isfinite(lost) ? lost : 0.0f;
    }
  }
  return rounded;
}

// "" when `got` has `expected`'s bits (any NaN matching any NaN, and a zero either zero: a sum
// that starts at +0, as every plane's does, gives +0 for a value that rounds to -0); else the first
// difference.
std::string same_bits(const std::vector<float>& got, const std::vector<float>& expected) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(expected[i]);
    const bool both_zero = got[i] == 0.0f && expected[i] == 0.0f;
    if (!both_nan && !both_zero && std::memcmp(&got[i], &expected[i], sizeof(float)) != 0)
      return "element " + std::to_string(i) + " is " + std::to_string(got[i]) + " (" +
             std::to_string(std::ldexp(got[i], 30)) + " * 2^-30), the CPU's rounding " +
             std::to_string(expected[i]);
  }
  return {};
}

nccl_plane_options on_the_wire(nccl_plane_options options, wire_format format, bool feedback) {
  options.compression = format;
  options.error_feedback = feedback;
  return options;
}

// One rank on a 16-bit wire: the group's sum is the rank's own values rounded, so the device's
// rounding (and NCCL's 16-bit allreduce, and the exchange's widening) must give the CPU's bits.
TEST_P(one_rank_communicator, a_16_bit_wire_rounds_every_value_as_the_cpu_does) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  for (auto format : {wire_format::fp16, wire_format::bf16}) {
    SCOPED_TRACE(std::string(herd::comm::name_of(format)));
    auto plane =
        make_nccl_plane(0, 1, make_nccl_unique_id(), on_the_wire(options(), format, false));
    // Weight 1 keeps the halfway cases halfway; 0.7 shows the weight is applied before rounding.
    for (float weight : {1.0f, 0.7f}) {
      const std::size_t count = 4099;
      const auto values = awkward_values(count);
      gpu_floats send(values);
      gpu_floats out(std::vector<float>(count, std::nanf("")));
      auto work = plane->group_reduce({{0, weight}}, send.data(), out.data(), count, {});
      ASSERT_EQ(work->wait(2min).message(), "");
      const auto expected = rounded_on_the_cpu(format, values, weight, nullptr);
      EXPECT_EQ(same_bits(out.download(), expected), "") << "weight " << weight;
    }
  }
}

// Error feedback on the device carries what the CPU carries, round after round, also when the
// buffer is reduced in two parts (each part's elements keep their own residual); and it keeps a
// value the format always rounds down from drifting: 64 rounds of 1 + 2^-12 (fp16) or 1 + 2^-9
// (bf16), each rounded to 1 alone, sum to within half a unit of the exact total with it.
TEST_P(one_rank_communicator, error_feedback_on_a_16_bit_wire_carries_what_the_cpu_carries) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  for (auto format : {wire_format::fp16, wire_format::bf16}) {
    SCOPED_TRACE(std::string(herd::comm::name_of(format)));
    auto plane = make_nccl_plane(0, 1, make_nccl_unique_id(), on_the_wire(options(), format, true));
    const std::size_t count = 4099;
    const std::size_t cut = 1000;
    std::vector<float> residual(count, 0.0f);
    for (std::size_t round = 0; round < 3; ++round) {
      const auto values = contribution(count, round, 0);
      const auto expected = rounded_on_the_cpu(format, values, 0.5f, &residual);
      gpu_floats send(values);
      if (round < 2) { // in place, whole
        auto work = plane->group_reduce({{0, 0.5f}}, send.data(), send.data(), count, {});
        ASSERT_EQ(work->wait(2min).message(), "");
      } else { // in two parts
        for (auto [offset, size] : {std::pair{cut, count - cut}, std::pair{std::size_t{0}, cut}}) {
          herd::comm::operation_options part;
          part.whole_count = count;
          part.part_offset = offset;
          auto work = plane->group_reduce({{0, 0.5f}}, send.data() + offset, send.data() + offset,
                                          size, part);
          ASSERT_EQ(work->wait(2min).message(), "");
        }
      }
      EXPECT_EQ(same_bits(send.download(), expected), "") << "round " << round;
    }
    const float value = 1.0f + std::ldexp(1.0f, format == wire_format::fp16 ? -12 : -9);
    const double unit = std::ldexp(1.0, format == wire_format::fp16 ? -10 : -7);
    for (bool feedback : {true, false}) {
      auto drifting =
          make_nccl_plane(0, 1, make_nccl_unique_id(), on_the_wire(options(), format, feedback));
      double total = 0.0;
      for (int round = 0; round < 64; ++round) {
        gpu_floats send(std::vector<float>{value});
        auto work = drifting->group_reduce({{0, 1.0f}}, send.data(), send.data(), 1, {});
        ASSERT_EQ(work->wait(2min).message(), "");
        total += send.download()[0];
      }
      const double drift = std::abs(total - 64.0 * value);
      if (feedback)
        EXPECT_LE(drift, unit / 2) << "with error feedback";
      else
        EXPECT_GE(drift, 8 * unit) << "without error feedback: the test would not see a drift";
    }
  }
}

TEST_P(one_rank_communicator, a_part_outside_its_whole_buffer_fails_alone) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  auto plane =
      make_nccl_plane(0, 1, make_nccl_unique_id(), on_the_wire(options(), wire_format::bf16, true));
  gpu_floats send(contribution(100, 0, 0));
  herd::comm::operation_options part;
  part.whole_count = 120;
  part.part_offset = 40;
  auto work = plane->group_reduce({{0, 1.0f}}, send.data(), send.data(), 100, part);
  EXPECT_EQ(work->wait(0ms).kind(), outcome::invalid_argument);
  EXPECT_THAT(work->wait(0ms).message(),
              HasSubstr("a part of 100 floats at 40 does not fit in a buffer of 120"));
  EXPECT_FALSE(plane->aborted()) << plane->abort_reason();
}

INSTANTIATE_TEST_SUITE_P(algorithms, one_rank_communicator,
                         testing::Values(full_group_algorithm::allreduce,
                                         full_group_algorithm::exchange),
                         [](const testing::TestParamInfo<full_group_algorithm>& tested) {
                           return std::string(algorithm_name(tested.param));
                         });

// NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU detected", invalid usage):
// both ranks (threads here) fail with NCCL's words, in time, and nothing hangs.
TEST(nccl_plane, refuses_two_ranks_on_one_gpu) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  const auto id = make_nccl_unique_id();
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  ranks.reserve(2);
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      nccl_plane_options options;
      options.timeout = std::chrono::seconds(20);
      try {
        auto plane = make_nccl_plane(rank, 2, id, options);
      } catch (const std::exception& error) {
        errors[static_cast<std::size_t>(rank)] = error.what();
      }
    });
  }
  for (auto& rank : ranks)
    rank.join();
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_THAT(errors[static_cast<std::size_t>(rank)],
                HasSubstr("nccl rank " + std::to_string(rank) + " of 2 (device 0): "))
        << "rank " << rank << " initialised a second rank on the same GPU";
  // At least one rank learns NCCL's reason (the other may only see its peer vanish, or time out).
  EXPECT_TRUE(errors[0].find("invalid usage") != std::string::npos ||
              errors[1].find("invalid usage") != std::string::npos)
      << errors[0] << "\n"
      << errors[1];
}

// ---- forked rank processes ----------------------------------------------------------------------

std::string rank_program() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error)
    throw std::runtime_error("cannot find this test's own path: " + error.message());
  return (self.parent_path() / HERD_NCCL_RANK_PROGRAM_NAME).string();
}

struct rank_outcome {
  bool exited = false; // on its own, before the limit
  int exit_code = -1;
  std::string output;
};

// Runs each argument list as a child process (fork and exec of the rank program, output to a
// file), waits at most `limit` for all of them, kills the rest.
std::vector<rank_outcome> run_ranks(const std::vector<std::vector<std::string>>& argument_lists,
                                    std::chrono::seconds limit) {
  herd::testing::temp_directory logs;
  const std::string program = rank_program();
  std::vector<pid_t> children;
  std::vector<std::string> log_files;
  for (std::size_t i = 0; i < argument_lists.size(); ++i) {
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), argument_lists[i].begin(), argument_lists[i].end());
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (auto& arg : argv)
      args.push_back(arg.data());
    args.push_back(nullptr);
    log_files.push_back(logs.file("rank" + std::to_string(i) + ".log"));
    const pid_t child = ::fork();
    if (child < 0)
      throw std::runtime_error("fork failed");
    if (child == 0) {
      const int log = ::open(log_files.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) {
        ::dup2(log, STDOUT_FILENO);
        ::dup2(log, STDERR_FILENO);
      }
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    children.push_back(child);
  }
  std::vector<rank_outcome> outcomes(children.size());
  std::vector<bool> reaped(children.size(), false);
  const auto give_up = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool all = true;
    for (std::size_t i = 0; i < children.size(); ++i) {
      if (reaped[i])
        continue;
      int status = 0;
      if (::waitpid(children[i], &status, WNOHANG) == children[i]) {
        reaped[i] = true;
        outcomes[i].exited = WIFEXITED(status);
        outcomes[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      } else {
        all = false;
      }
    }
    if (all || std::chrono::steady_clock::now() >= give_up)
      break;
    std::this_thread::sleep_for(20ms);
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (!reaped[i]) {
      ::kill(children[i], SIGKILL);
      ::waitpid(children[i], nullptr, 0);
    }
    std::ifstream log(log_files[i]);
    std::stringstream text;
    text << log.rdbuf();
    outcomes[i].output = text.str();
  }
  return outcomes;
}

void expect_all_passed(const std::vector<rank_outcome>& outcomes) {
  for (std::size_t i = 0; i < outcomes.size(); ++i)
    EXPECT_TRUE(outcomes[i].exited && outcomes[i].exit_code == 0)
        << "process " << i << (outcomes[i].exited ? " exited with status " : " was killed, status ")
        << outcomes[i].exit_code << "; its output:\n"
        << outcomes[i].output;
}

TEST(nccl_plane_processes, an_initialisation_whose_peer_never_joins_is_aborted_at_the_timeout) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  expect_all_passed(run_ranks({{"init_without_peer"}}, std::chrono::seconds(120)));
}

TEST(nccl_plane_processes, a_reduction_behind_a_stalled_stream_is_aborted_at_the_timeout) {
  HERD_SKIP_WITHOUT_CUDA_DEVICE();
  expect_all_passed(run_ranks({{"stalled_stream"}}, std::chrono::seconds(180)));
}

int usable_ranks() {
  return static_cast<int>(std::min<std::size_t>(query_devices().devices.size(), 4));
}

#define SKIP_WITHOUT_TWO_DEVICES()                                                                 \
  do {                                                                                             \
    HERD_SKIP_WITHOUT_CUDA_DEVICE();                                                               \
    if (usable_ranks() < 2)                                                                        \
      GTEST_SKIP()                                                                                 \
          << "needs 2 CUDA devices (NCCL refuses two ranks on one GPU); this machine has "         \
          << query_devices().devices.size();                                                       \
  } while (false)

class ranks_on_separate_gpus : public testing::TestWithParam<full_group_algorithm> {};

// Every rank of a `size`-rank communicator running the schedule through `algorithm`.
std::vector<std::vector<std::string>> schedule_ranks(full_group_algorithm algorithm,
                                                     const char* compression) {
  const int size = usable_ranks();
  const auto id = make_nccl_unique_id(); // the bootstrap root lives here while the ranks run
  std::vector<std::vector<std::string>> ranks;
  ranks.reserve(static_cast<std::size_t>(size));
  for (int rank = 0; rank < size; ++rank)
    ranks.push_back({"reduce", std::to_string(rank), std::to_string(size), to_hex(id),
                     algorithm_name(algorithm), compression});
  return ranks;
}

TEST_P(ranks_on_separate_gpus, reduce_every_group_of_the_schedule_correctly) {
  SKIP_WITHOUT_TWO_DEVICES();
  expect_all_passed(run_ranks(schedule_ranks(GetParam(), "none"), std::chrono::seconds(300)));
}

// The same on a 16-bit wire: within each format's rounding of the exact sum (the one-rank tests
// check the rounding's bits; this checks NCCL's transfers and sums of 16-bit values).
TEST_P(ranks_on_separate_gpus, reduce_every_group_of_the_schedule_on_a_16_bit_wire) {
  SKIP_WITHOUT_TWO_DEVICES();
  for (const char* compression : {"bf16", "fp16"}) {
    SCOPED_TRACE(compression);
    expect_all_passed(
        run_ranks(schedule_ranks(GetParam(), compression), std::chrono::seconds(300)));
  }
}

INSTANTIATE_TEST_SUITE_P(algorithms, ranks_on_separate_gpus,
                         testing::Values(full_group_algorithm::allreduce,
                                         full_group_algorithm::exchange),
                         [](const testing::TestParamInfo<full_group_algorithm>& tested) {
                           return std::string(algorithm_name(tested.param));
                         });

TEST(nccl_plane_processes, a_peer_that_never_calls_turns_into_a_timeout_and_an_abort) {
  SKIP_WITHOUT_TWO_DEVICES();
  herd::testing::temp_directory shared;
  const auto id = make_nccl_unique_id();
  expect_all_passed(run_ranks({{"peer_never_calls", "0", to_hex(id), shared.path().string()},
                               {"peer_never_calls", "1", to_hex(id), shared.path().string()}},
                              std::chrono::seconds(300)));
}

#endif // HERD_TEST_WITH_NCCL

} // namespace

#endif // HERD_NCCL_RANK_PROGRAM
