// The WAGMA-SGD butterfly schedule; see butterfly.hpp.
#include "policy/butterfly.hpp"

#include "kernels/check.hpp"

namespace herd::policy {

namespace {

// Indices must fit an int and a 32-bit mask once rounded up to a power of two.
constexpr int max_workers = 1 << 30;

bool is_power_of_two(int value) {
  return value > 0 && (value & (value - 1)) == 0;
}

// log2 of the smallest power of two >= value (value >= 1).
int ceil_log2(int value) {
  int bits = 0;
  while ((1 << bits) < value)
    ++bits;
  return bits;
}

int floor_log2(int value) {
  int bits = 0;
  while ((value >> (bits + 1)) > 0)
    ++bits;
  return bits;
}

} // namespace

butterfly_schedule::butterfly_schedule(int workers, int group_size)
    : workers_(workers), group_size_(group_size), bits_(0), group_bits_(0) {
  HERD_CHECK(workers >= 1 && workers <= max_workers,
             "workers " << workers << ": need 1 to " << max_workers);
  bits_ = ceil_log2(workers);
  if (group_size_ == 0)
    group_size_ = default_group_size(workers);
  HERD_CHECK(is_power_of_two(group_size_),
             "group size " << group_size_ << " is not a power of two (0 picks the default)");
  HERD_CHECK(group_size_ <= (1 << bits_), "group size " << group_size_ << " exceeds " << workers
                                                        << " workers rounded up to a power of two ("
                                                        << (1 << bits_) << ")");
  group_bits_ = floor_log2(group_size_);
}

int butterfly_schedule::default_group_size(int workers) {
  HERD_CHECK(workers >= 1 && workers <= max_workers,
             "workers " << workers << ": need 1 to " << max_workers);
  if (workers == 1)
    return 1;
  const int size = 1 << (ceil_log2(workers) / 2);
  return size < 2 ? 2 : size;
}

std::uint32_t butterfly_schedule::varying_mask(std::uint64_t step) const {
  if (bits_ == 0)
    return 0; // one worker: no bits at all
  // (t*g + r) mod L, reduced first so that t*g cannot overflow.
  const auto index_bits = static_cast<std::uint64_t>(bits_);
  const std::uint64_t start = (step % index_bits) * static_cast<std::uint64_t>(group_bits_);
  std::uint32_t mask = 0;
  for (int r = 0; r < group_bits_; ++r)
    mask |= std::uint32_t{1} << ((start + static_cast<std::uint64_t>(r)) % index_bits);
  return mask;
}

std::vector<int> butterfly_schedule::varying_bits(std::uint64_t step) const {
  const std::uint32_t mask = varying_mask(step);
  std::vector<int> result;
  for (int bit = 0; bit < bits_; ++bit)
    if ((mask >> bit) & 1U)
      result.push_back(bit);
  return result;
}

std::vector<int> butterfly_schedule::members(std::uint32_t base, std::uint32_t mask) const {
  // Spreading the bits of 0, 1, ..., S-1 over the mask's positions keeps their order, so the
  // members come out ascending and the absent ones (>= P) last.
  std::vector<int> result;
  for (std::uint32_t choice = 0; choice < static_cast<std::uint32_t>(group_size_); ++choice) {
    std::uint32_t index = base;
    std::uint32_t rest = choice;
    for (int bit = 0; bit < bits_ && rest != 0; ++bit) {
      if ((mask >> bit) & 1U) {
        index |= (rest & 1U) << bit;
        rest >>= 1U;
      }
    }
    if (index >= static_cast<std::uint32_t>(workers_))
      break;
    result.push_back(static_cast<int>(index));
  }
  return result;
}

std::vector<std::vector<int>> butterfly_schedule::groups(std::uint64_t step) const {
  const std::uint32_t mask = varying_mask(step);
  std::vector<std::vector<int>> result;
  // A group's smallest member has every varying bit clear, and is present whenever any member is.
  for (std::uint32_t base = 0; base < static_cast<std::uint32_t>(workers_); ++base)
    if ((base & mask) == 0)
      result.push_back(members(base, mask));
  return result;
}

std::vector<int> butterfly_schedule::group_of(int worker, std::uint64_t step) const {
  HERD_CHECK(worker >= 0 && worker < workers_,
             "worker " << worker << " of " << workers_ << " (indices 0.." << workers_ - 1 << ")");
  const std::uint32_t mask = varying_mask(step);
  return members(static_cast<std::uint32_t>(worker) & ~mask, mask);
}

// With k = ceil(L/g), steps t0..t0+k-1 vary L consecutive bit positions (mod L), so each bit once
// or more, and with every index present an update spreads over all of them: k steps, and k-1 do
// not cover every bit. With absent indices, present means < P, which every submask of a present
// index is, so an update from x reaches y in 2k-1 steps: over steps 0..k-2 set each varying bit to
// x_i & y_i, and at step k-1 set its bits to y_i (each point is a submask of x or of y). Step k-1
// covers the bits that steps k..2k-2 do not, since (k-1)g < L <= kg; those steps set the rest to
// y_i, staying submasks of y.
std::optional<int> butterfly_schedule::mixing_steps() const {
  if (workers_ == 1)
    return 0;
  if (group_bits_ == 0)
    return std::nullopt; // groups of one: nothing ever mixes
  const int steps = (bits_ + group_bits_ - 1) / group_bits_;
  return workers_ == (1 << bits_) ? steps : 2 * steps - 1;
}

} // namespace herd::policy
