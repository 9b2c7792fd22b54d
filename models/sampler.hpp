// How workers see the data: disjoint equal shards of one seeded permutation, and a batch sampler
// that reshuffles its shard each epoch from a seed, so every run is reproducible.
#pragma once

#include "herd/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace herd::models {

/// Sample indices of `worker`'s shard out of `workers`: a permutation of [0, n) seeded by `seed`,
/// cut into `workers` consecutive parts of n / workers indices each (the n % workers remainder is
/// left out, so all shards have the same size). Shards of different workers are disjoint.
std::vector<std::size_t> shard_indices(std::size_t n, int worker, int workers, std::uint64_t seed);

/// Bucketing by length (data.bucket-by-length): the length of each shard sample (shard order),
/// and a seed every worker of the run shares.
struct length_buckets {
  std::vector<std::size_t> lengths;
  std::uint64_t order_seed = 0;
};

/// Yields batches of `batch_size` indices from a shard, epoch after epoch. Each epoch is a fresh
/// permutation of the shard drawn from (seed, epoch); the last partial batch of an epoch is
/// dropped, so every epoch has the same number of batches.
///
/// With length buckets, each epoch keeps the same random selection of whole batches' worth of
/// samples, sorts them by length (ties in the random order), cuts them into batches of
/// neighbouring lengths, and takes the batches in an order drawn from (order_seed, epoch). Shards
/// of one run are random parts of one dataset of equal size, so with the same order seed every
/// worker's k-th batch of an epoch has the same length rank: at each step all workers draw texts
/// of similar length (what sequence-model users do to cut padding and imbalance).
class batch_sampler {
public:
  batch_sampler(std::vector<std::size_t> shard, std::size_t batch_size, std::uint64_t seed,
                length_buckets buckets = {});

  /// The next batch (valid until the next call).
  const std::vector<std::size_t>& next();

  std::size_t batch_size() const { return batch_size_; }
  std::size_t batches_per_epoch() const { return shard_.size() / batch_size_; }
  /// Epoch of the batch that next() returns next (0-based).
  std::uint64_t epoch() const { return epoch_; }
  std::uint64_t batches_drawn() const { return drawn_; }

  /// Where the sampler is: with the shard and seed, all it needs to go on (checkpoints).
  struct position {
    std::uint64_t epoch = 0;
    std::uint64_t offset = 0; // into this epoch's permutation
    std::uint64_t drawn = 0;
  };
  position where() const { return {epoch_, position_, drawn_}; }
  /// Continues from `at` (a position of a sampler with the same shard, batch size and seed).
  void seek(const position& at);

private:
  void shuffle_for_epoch();

  std::vector<std::size_t> shard_;
  length_buckets buckets_; // lengths empty: no bucketing
  std::vector<std::size_t> order_;
  std::vector<std::size_t> batch_;
  std::size_t batch_size_;
  std::uint64_t seed_;
  std::uint64_t epoch_ = 0;
  std::size_t position_ = 0;
  std::uint64_t drawn_ = 0;
};

/// Copies the rows `indices` of `data` into x (resized to indices.size() x features) and their
/// labels into y.
void gather_batch(const dataset& data, const std::vector<std::size_t>& indices, tensor& x,
                  std::vector<std::int32_t>& y);

/// Fisher-Yates with std::mt19937_64 and plain modulo, so the order is the same with every
/// standard library (std::shuffle's is not specified).
void seeded_shuffle(std::vector<std::size_t>& values, std::uint64_t seed);

/// For each sample, whether it is held out (the fortunes' test set, a validation set): in every
/// class, round(n * test_fraction) samples chosen by a shuffle seeded with (seed, class), so each
/// class has the same share in both parts and the choice depends on the seed alone.
std::vector<bool> stratified_test_choice(const std::vector<std::int32_t>& labels, int classes,
                                         double test_fraction, std::uint64_t seed);

/// For each sample, whether it is among `count` (at most all) samples chosen as
/// stratified_test_choice chooses, each class's share of `count` rounded so that the shares add
/// up to `count` exactly (data.max-texts).
std::vector<bool> stratified_subset(const std::vector<std::int32_t>& labels, int classes,
                                    std::size_t count, std::uint64_t seed);

} // namespace herd::models
