// Sharding and batch sampling, reproducible from seeds alone: the same (seed, worker, epoch) gives
// the same samples on every machine and standard library.
#include "models/sampler.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <utility>

namespace herd::models {

namespace {

// SplitMix64's output function (Steele, Lea, Flood: "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a bijection on 64 bits that spreads every input bit over the output.
std::uint64_t splitmix64_mix(std::uint64_t value) {
  value = (value ^ (value >> 30)) * 0xBF58476D1CE4E5B9;
  value = (value ^ (value >> 27)) * 0x94D049BB133111EB;
  return value ^ (value >> 31);
}

// The seed of an epoch's shuffle is output number epoch + 1 of a SplitMix64 generator seeded with
// `seed`. Distinct epochs get distinct seeds (the mix is a bijection), and none equals `seed`
// itself, so a sampler given the same seed as shard_indices does not replay the shard's shuffle.
std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) {
  constexpr std::uint64_t golden_gamma = 0x9E3779B97F4A7C15;
  return splitmix64_mix(seed + (epoch + 1) * golden_gamma);
}

} // namespace

void seeded_shuffle(std::vector<std::size_t>& values, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  // Plain modulo: its bias (below size / 2^64) is negligible, and unlike a rejection loop or
  // std::uniform_int_distribution it draws exactly one number per step on every library.
  for (std::size_t i = values.size(); i > 1; --i) {
    const auto pick = static_cast<std::size_t>(engine() % i);
    std::swap(values[i - 1], values[pick]);
  }
}

std::vector<std::size_t> shard_indices(std::size_t n, int worker, int workers, std::uint64_t seed) {
  HERD_CHECK_GT(workers, 0);
  HERD_CHECK(worker >= 0 && worker < workers, "worker " << worker << " is not one of the "
                                                        << workers << " workers (numbered from 0)");
  HERD_CHECK(n >= static_cast<std::size_t>(workers),
             n << " samples cannot give each of " << workers << " workers one");
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  seeded_shuffle(order, seed);
  const std::size_t shard_size = n / static_cast<std::size_t>(workers);
  const auto first = order.begin() + static_cast<std::ptrdiff_t>(shard_size) * worker;
  return std::vector<std::size_t>(first, first + static_cast<std::ptrdiff_t>(shard_size));
}

batch_sampler::batch_sampler(std::vector<std::size_t> shard, std::size_t batch_size,
                             std::uint64_t seed, length_buckets buckets)
    : shard_(std::move(shard)), buckets_(std::move(buckets)), batch_size_(batch_size), seed_(seed) {
  HERD_CHECK_GT(batch_size_, std::size_t{0});
  HERD_CHECK(shard_.size() >= batch_size_,
             "a shard of " << shard_.size() << " samples cannot fill one batch of " << batch_size_);
  HERD_CHECK(buckets_.lengths.empty() || buckets_.lengths.size() == shard_.size(),
             buckets_.lengths.size() << " lengths for a shard of " << shard_.size());
  batch_.reserve(batch_size_);
  shuffle_for_epoch();
}

const std::vector<std::size_t>& batch_sampler::next() {
  const auto first = order_.begin() + static_cast<std::ptrdiff_t>(position_);
  batch_.assign(first, first + static_cast<std::ptrdiff_t>(batch_size_));
  position_ += batch_size_;
  ++drawn_;
  // Move on as soon as the epoch cannot fill another batch, so that epoch() already names the
  // epoch of the batch that next() returns next.
  if (position_ + batch_size_ > order_.size()) {
    ++epoch_;
    shuffle_for_epoch();
  }
  return batch_;
}

void batch_sampler::seek(const position& at) {
  HERD_CHECK(at.offset + batch_size_ <= shard_.size(),
             "a sampler position " << at.offset << " past the last batch of a shard of "
                                   << shard_.size());
  epoch_ = at.epoch;
  shuffle_for_epoch();
  position_ = static_cast<std::size_t>(at.offset);
  drawn_ = at.drawn;
}

void batch_sampler::shuffle_for_epoch() {
  position_ = 0;
  if (buckets_.lengths.empty()) {
    order_ = shard_;
    seeded_shuffle(order_, epoch_seed(seed_, epoch_));
    return;
  }
  // Positions in the shard: a random selection of whole batches, sorted by length.
  std::vector<std::size_t> kept(shard_.size());
  std::iota(kept.begin(), kept.end(), std::size_t{0});
  seeded_shuffle(kept, epoch_seed(seed_, epoch_));
  const std::size_t batches = shard_.size() / batch_size_;
  kept.resize(batches * batch_size_);
  std::stable_sort(kept.begin(), kept.end(), [this](std::size_t a, std::size_t b) {
    return buckets_.lengths[a] < buckets_.lengths[b];
  });
  // The batches in an order every worker shares.
  std::vector<std::size_t> batch_order(batches);
  std::iota(batch_order.begin(), batch_order.end(), std::size_t{0});
  seeded_shuffle(batch_order, epoch_seed(buckets_.order_seed, epoch_));
  order_.clear();
  for (std::size_t batch : batch_order)
    for (std::size_t row = 0; row < batch_size_; ++row)
      order_.push_back(shard_[kept[batch * batch_size_ + row]]);
}

void gather_batch(const dataset& data, const std::vector<std::size_t>& indices, tensor& x,
                  std::vector<std::int32_t>& y) {
  HERD_CHECK(!indices.empty(), "an empty batch of " << data.name);
  y.resize(indices.size());
  for (std::size_t row = 0; row < indices.size(); ++row) {
    const std::size_t sample = indices[row];
    HERD_CHECK(sample < data.size(), "sample " << sample << " of a batch is not in " << data.name
                                               << " (" << data.size() << " samples)");
    y[row] = data.labels[sample];
  }
  gather_rows(data, indices.data(), indices.size(), x);
}

namespace {

// Each sample's index, by class.
std::vector<std::vector<std::size_t>> members_by_class(const std::vector<std::int32_t>& labels,
                                                       int classes) {
  std::vector<std::vector<std::size_t>> members(static_cast<std::size_t>(classes));
  for (std::size_t i = 0; i < labels.size(); ++i)
    members.at(static_cast<std::size_t>(labels[i])).push_back(i);
  return members;
}

// Marks count(c, n_c) samples of each class c, chosen by a shuffle seeded with (seed, c).
template <typename Count>
std::vector<bool> choose_per_class(std::vector<std::vector<std::size_t>> members,
                                   std::size_t samples, std::uint64_t seed, Count count) {
  std::vector<bool> chosen(samples, false);
  for (std::size_t label = 0; label < members.size(); ++label) {
    auto& indices = members[label];
    seeded_shuffle(indices, seed * 0x9E3779B97F4A7C15ull + label + 1);
    const std::size_t take = std::min(count(label, indices.size()), indices.size());
    for (std::size_t i = 0; i < take; ++i)
      chosen[indices[i]] = true;
  }
  return chosen;
}

} // namespace

std::vector<bool> stratified_test_choice(const std::vector<std::int32_t>& labels, int classes,
                                         double test_fraction, std::uint64_t seed) {
  HERD_CHECK(test_fraction >= 0.0 && test_fraction <= 1.0, "a test fraction of " << test_fraction);
  return choose_per_class(members_by_class(labels, classes), labels.size(), seed,
                          [test_fraction](std::size_t, std::size_t n) {
                            return static_cast<std::size_t>(
                                std::llround(static_cast<double>(n) * test_fraction));
                          });
}

std::vector<bool> stratified_subset(const std::vector<std::int32_t>& labels, int classes,
                                    std::size_t count, std::uint64_t seed) {
  auto members = members_by_class(labels, classes);
  count = std::min(count, labels.size());
  // Largest remainder: each class's share rounded down, then one more for the classes whose
  // shares lost the most, so the counts add up to `count` exactly.
  std::vector<std::size_t> take(members.size());
  std::vector<std::pair<double, std::size_t>> remainders;
  std::size_t taken = 0;
  for (std::size_t label = 0; label < members.size(); ++label) {
    const double share = static_cast<double>(members[label].size()) * static_cast<double>(count) /
                         static_cast<double>(std::max<std::size_t>(labels.size(), 1));
    take[label] = static_cast<std::size_t>(share);
    taken += take[label];
    remainders.emplace_back(share - static_cast<double>(take[label]), label);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; taken < count && i < remainders.size(); ++i, ++taken)
    ++take[remainders[i].second];
  return choose_per_class(std::move(members), labels.size(), seed,
                          [&take](std::size_t label, std::size_t) { return take[label]; });
}

} // namespace herd::models
