// A small metric registry whose API mirrors the Prometheus C++ client (prometheus-cpp: Registry,
// Family with labels, Counter, Gauge, Histogram with bucket boundaries, a text serializer), in
// Herd's snake_case. Debian 12 packages no Prometheus C++ client, so this is the smallest faithful
// equivalent (prometheus-cpp 1.3). Exposition format 0.0.4: label values and HELP text escaped,
// histograms cumulative with a `+Inf` bucket, counters named `_total`, HELP and TYPE on every
// metric. Thread-safe: metrics may be updated from any thread while the registry is collected.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace herd::monitoring {

using labels = std::map<std::string, std::string>;

enum class metric_type : std::uint8_t { counter, gauge, histogram };

/// One sample line's worth of a collected metric.
struct client_metric {
  labels label_values; // the family's constant labels merged with the metric's own
  double value = 0.0;  // counter and gauge
  // histogram: cumulative counts per upper bound (the last bound is +Inf), sum and count
  std::vector<double> bucket_bounds;
  std::vector<std::uint64_t> cumulative_counts;
  double sum = 0.0;
  std::uint64_t count = 0;
};

/// A collected family: what the serializer writes.
struct metric_family {
  std::string name;
  std::string help;
  metric_type type = metric_type::counter;
  std::vector<client_metric> metrics;
};

/// Monotonic. increment() of a negative amount is ignored, as in prometheus-cpp (and so is NaN,
/// which would otherwise stick forever). Lock-free: a compare-exchange loop on an atomic double.
class counter {
public:
  void increment(double amount = 1.0);
  double value() const;

private:
  std::atomic<double> value_{0.0};
};

class gauge {
public:
  void set(double value);
  void increment(double amount = 1.0);
  void decrement(double amount = 1.0);
  double value() const;

private:
  std::atomic<double> value_{0.0};
};

using bucket_boundaries = std::vector<double>;

/// Bucket i counts observations v <= bounds[i] (le is inclusive); a final +Inf bucket is implicit.
class histogram {
public:
  /// Bounds must be strictly increasing and finite; throws std::invalid_argument otherwise.
  explicit histogram(bucket_boundaries bounds);
  void observe(double value);
  /// A consistent snapshot: cumulative counts (the last one, +Inf, equals count), sum, count.
  client_metric collect() const;

  /// Boundaries start, start*factor, ... (count of them), as
  /// prometheus::Histogram::ExponentialBuckets.
  static bucket_boundaries exponential_buckets(double start, double factor, std::size_t count);
  static bucket_boundaries linear_buckets(double start, double width, std::size_t count);

private:
  bucket_boundaries bounds_;
  mutable std::mutex mutex_;
  std::vector<std::uint64_t> counts_; // per bucket, not cumulative; bounds_.size() + 1 of them
  double sum_ = 0.0;
  std::uint64_t count_ = 0;
};

class family_base {
public:
  virtual ~family_base() = default;
  virtual metric_family collect() const = 0;
  virtual const std::string& name() const = 0;
  virtual metric_type type() const = 0;
  virtual const labels& constant_labels() const = 0;
  /// Drops every metric whose label `label` is `value` (a job's, once it ended): their series
  /// end, and references to them become invalid, so only the code that added them may call this.
  virtual void remove_where(const std::string& label, const std::string& value) = 0;
};

namespace detail {

/// Throws std::invalid_argument naming the label when a metric's own label name is invalid,
/// reserved (`__` prefix, `le` on a histogram) or already one of the family's constant labels.
void check_metric_labels(const std::string& family_name, metric_type type,
                         const labels& constant_labels, const labels& label_values);

} // namespace detail

/// All metrics of one name, one per label set. add() returns the same metric for the same labels;
/// references stay valid until the metric is removed (remove(), remove_where(); a Herd job removes
/// its own series, those labelled job = its name, when it ends), so hot paths keep them.
template <class Metric>
class family final : public family_base {
public:
  /// Validates what registry documents (name, help, `_total`, constant label names) and that
  /// `type` is Metric's; throws std::invalid_argument otherwise.
  family(std::string name, std::string help, labels constant_labels, metric_type type);

  /// For histograms pass the bucket boundaries; counters and gauges take no arguments. Throws
  /// std::invalid_argument for an invalid or reserved label name. For labels already added it
  /// returns the existing metric and ignores `args`. The lookup takes a mutex: cache the result.
  template <class... Args>
  Metric& add(const labels& label_values, Args&&... args);

  /// Drops the metric of these labels (nothing if there is none): its series ends, and references
  /// to it become invalid, so only the code that added it may call this.
  void remove(const labels& label_values) {
    const std::lock_guard<std::mutex> lock(mutex_);
    metrics_.erase(label_values);
  }

  void remove_where(const std::string& label, const std::string& value) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = metrics_.begin(); it != metrics_.end();) {
      const auto found = it->first.find(label);
      it = found != it->first.end() && found->second == value ? metrics_.erase(it) : std::next(it);
    }
  }

  metric_family collect() const override;
  const std::string& name() const override { return name_; }
  metric_type type() const override { return type_; }
  const labels& constant_labels() const override { return constant_labels_; }

private:
  std::string name_;
  std::string help_;
  labels constant_labels_;
  metric_type type_;
  mutable std::mutex mutex_;
  std::map<labels, std::unique_ptr<Metric>> metrics_;
};

template <class Metric>
template <class... Args>
Metric& family<Metric>::add(const labels& label_values, Args&&... args) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (auto found = metrics_.find(label_values); found != metrics_.end())
    return *found->second;
  detail::check_metric_labels(name_, type_, constant_labels_, label_values);
  auto created = std::make_unique<Metric>(std::forward<Args>(args)...);
  return *metrics_.emplace(label_values, std::move(created)).first->second;
}

// The constructor and collect() live in metrics.cpp, instantiated there for the three types.
extern template class family<counter>;
extern template class family<gauge>;
extern template class family<histogram>;

class registry {
public:
  /// Registers (or, for the same name, type and constant labels, returns) a family; on a repeat
  /// the help text is not compared. Throws std::invalid_argument for an invalid metric name, a
  /// name registered with another type or other constant labels, a name that clashes with a
  /// histogram's series (`x_bucket`, `x_sum`, `x_count` of a histogram `x`), a counter not named
  /// `_total`, or an empty help text.
  family<counter>& add_counter(const std::string& name, const std::string& help,
                               const labels& constant_labels = {});
  family<gauge>& add_gauge(const std::string& name, const std::string& help,
                           const labels& constant_labels = {});
  family<histogram>& add_histogram(const std::string& name, const std::string& help,
                                   const labels& constant_labels = {});

  /// Every family, in registration order.
  std::vector<metric_family> collect() const;

private:
  template <class Metric>
  family<Metric>& add(const std::string& name, const std::string& help,
                      const labels& constant_labels, metric_type type);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<family_base>> families_;
};

/// Exposition format 0.0.4 (text/plain; version=0.0.4): HELP (escaped), TYPE, then the samples of
/// each family in one group; histograms as _bucket (cumulative, le ascending, +Inf last), _sum,
/// _count. Numbers in the classic locale; NaN as NaN, infinities as +Inf/-Inf.
void serialize(std::ostream& out, const std::vector<metric_family>& families);

/// The exposition text of a registry.
std::string expose(const registry& metrics);

/// Escapes a label value (\ " and newline) or, with `help`, HELP text (\ and newline).
std::string escape(const std::string& text, bool help = false);

} // namespace herd::monitoring
