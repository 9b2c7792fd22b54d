// The metric registry of metrics.hpp: lock-free counters and gauges, mutex-guarded histograms,
// name checks, and the text exposition format 0.0.4 with numbers written as Go's client does.
#include "herd/metrics.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace herd::monitoring {

// "Lock-free" is the point of counter and gauge; a platform without a lock-free atomic double
// would silently take a lock on every increment.
static_assert(std::atomic<double>::is_always_lock_free,
              "counter and gauge need a lock-free double");

namespace {

// --- names --------------------------------------------------------------------------------------

bool is_name_start(char c, bool allow_colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
}

bool is_name_char(char c, bool allow_colon) {
  return is_name_start(c, allow_colon) || (c >= '0' && c <= '9');
}

bool matches_name(std::string_view name, bool allow_colon) {
  if (name.empty() || !is_name_start(name.front(), allow_colon))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [allow_colon](char c) { return is_name_char(c, allow_colon); });
}

bool is_reserved(std::string_view name) {
  return name.size() >= 2 && name[0] == '_' && name[1] == '_';
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

const char* type_name(metric_type type) {
  switch (type) {
  case metric_type::counter:
    return "counter";
  case metric_type::gauge:
    return "gauge";
  case metric_type::histogram:
    return "histogram";
  }
  return "untyped";
}

void check_metric_name(const std::string& name) {
  if (!matches_name(name, true))
    throw std::invalid_argument("invalid metric name \"" + name +
                                "\": metric names must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  if (is_reserved(name))
    throw std::invalid_argument("invalid metric name \"" + name +
                                "\": names starting with __ are reserved for Prometheus");
}

void check_label_name(const std::string& metric_name, metric_type type, const std::string& name) {
  if (!matches_name(name, false))
    throw std::invalid_argument("invalid label name \"" + name + "\" on metric \"" + metric_name +
                                "\": label names must match [a-zA-Z_][a-zA-Z0-9_]*");
  if (is_reserved(name))
    throw std::invalid_argument("invalid label name \"" + name + "\" on metric \"" + metric_name +
                                "\": names starting with __ are reserved for Prometheus");
  if (type == metric_type::histogram && name == "le")
    throw std::invalid_argument("invalid label name \"le\" on histogram \"" + metric_name +
                                "\": le is reserved for the bucket bounds; pick another name");
}

template <class Metric>
constexpr metric_type type_of();
template <>
constexpr metric_type type_of<counter>() {
  return metric_type::counter;
}
template <>
constexpr metric_type type_of<gauge>() {
  return metric_type::gauge;
}
template <>
constexpr metric_type type_of<histogram>() {
  return metric_type::histogram;
}

/// The series names a family writes besides its own name (a histogram `x` writes `x_bucket`,
/// `x_sum` and `x_count`), which no other family may use.
std::vector<std::string> series_names(const std::string& name, metric_type type) {
  if (type == metric_type::histogram)
    return {name, name + "_bucket", name + "_sum", name + "_count"};
  return {name};
}

// --- numbers ------------------------------------------------------------------------------------

/// Writes `value` as Go's strconv.FormatFloat(value, 'g', -1, 64), which is what the Prometheus Go
/// client writes for sample values and `le` bounds (0.005, 1, 2.5, 1e+06, 1e-05): the shortest
/// digits that round-trip, in exponent form when the exponent is below -4 or at least 6.
void append_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  if (value == 0.0) { // -0 too, as the Go client writes it
    out += '0';
    return;
  }
  // Shortest round-trip digits in the form [-]d[.ddd]e(+|-)XX, locale independent.
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::scientific);
  std::string_view text(buffer.data(), static_cast<std::size_t>(result.ptr - buffer.data()));
  if (text.front() == '-') {
    out += '-';
    text.remove_prefix(1);
  }
  const auto exponent_at = text.find('e');
  std::string digits;
  for (const char c : text.substr(0, exponent_at))
    if (c != '.')
      digits += c;
  const std::string_view exponent_text = text.substr(exponent_at + 1);
  int exponent = 0;
  std::from_chars(exponent_text.data() + 1, exponent_text.data() + exponent_text.size(), exponent);
  if (exponent_text.front() == '-')
    exponent = -exponent;

  if (exponent < -4 || exponent >= 6) {
    out += digits.front();
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    out += exponent < 0 ? "e-" : "e+";
    const int magnitude = std::abs(exponent);
    if (magnitude < 10)
      out += '0';
    out += std::to_string(magnitude);
  } else if (exponent < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exponent - 1), '0');
    out += digits;
  } else {
    const auto integer_digits = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= integer_digits) {
      out += digits;
      out.append(integer_digits - digits.size(), '0');
    } else {
      out.append(digits, 0, integer_digits);
      out += '.';
      out.append(digits, integer_digits, std::string::npos);
    }
  }
}

void append_count(std::string& out, std::uint64_t value) {
  std::array<char, 24> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  out.append(buffer.data(), result.ptr);
}

// --- exposition ---------------------------------------------------------------------------------

void append_escaped(std::string& out, const std::string& text, bool help) {
  for (const char c : text) {
    switch (c) {
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '"':
      out += help ? "\"" : "\\\"";
      break;
    default:
      out += c;
    }
  }
}

/// `{a="1",b="2",le="0.5"}`, or nothing for no labels; `le` (when `le_bound` is given) comes last,
/// as the Go client writes it.
void append_labels(std::string& out, const labels& label_values, const double* le_bound) {
  if (label_values.empty() && le_bound == nullptr)
    return;
  out += '{';
  bool first = true;
  for (const auto& [name, value] : label_values) {
    if (!first)
      out += ',';
    first = false;
    out += name;
    out += "=\"";
    append_escaped(out, value, false);
    out += '"';
  }
  if (le_bound != nullptr) {
    if (!first)
      out += ',';
    out += "le=\"";
    append_number(out, *le_bound);
    out += '"';
  }
  out += '}';
}

void append_sample_name(std::string& out, const std::string& name, const char* suffix,
                        const labels& label_values, const double* le_bound) {
  out += name;
  out += suffix;
  append_labels(out, label_values, le_bound);
  out += ' ';
}

void append_histogram(std::string& out, const std::string& name, const client_metric& metric) {
  const std::size_t buckets =
      std::min(metric.bucket_bounds.size(), metric.cumulative_counts.size());
  bool wrote_infinity = false;
  for (std::size_t i = 0; i < buckets; ++i) {
    append_sample_name(out, name, "_bucket", metric.label_values, &metric.bucket_bounds[i]);
    append_count(out, metric.cumulative_counts[i]);
    out += '\n';
    wrote_infinity = std::isinf(metric.bucket_bounds[i]) && metric.bucket_bounds[i] > 0;
  }
  if (!wrote_infinity) { // a hand-built family without the mandatory +Inf bucket
    const double infinity = std::numeric_limits<double>::infinity();
    append_sample_name(out, name, "_bucket", metric.label_values, &infinity);
    append_count(out, metric.count);
    out += '\n';
  }
  append_sample_name(out, name, "_sum", metric.label_values, nullptr);
  append_number(out, metric.sum);
  out += '\n';
  append_sample_name(out, name, "_count", metric.label_values, nullptr);
  append_count(out, metric.count);
  out += '\n';
}

void append_family(std::string& out, const metric_family& family) {
  out += "# HELP ";
  out += family.name;
  out += ' ';
  append_escaped(out, family.help, true);
  out += "\n# TYPE ";
  out += family.name;
  out += ' ';
  out += type_name(family.type);
  out += '\n';
  for (const auto& metric : family.metrics) {
    if (family.type == metric_type::histogram) {
      append_histogram(out, family.name, metric);
    } else {
      append_sample_name(out, family.name, "", metric.label_values, nullptr);
      append_number(out, metric.value);
      out += '\n';
    }
  }
}

// --- collection ---------------------------------------------------------------------------------

client_metric collect_metric(const counter& metric) {
  client_metric result;
  result.value = metric.value();
  return result;
}

client_metric collect_metric(const gauge& metric) {
  client_metric result;
  result.value = metric.value();
  return result;
}

client_metric collect_metric(const histogram& metric) {
  return metric.collect();
}

/// Adds `amount` to an atomic double (C++17 has no fetch_add for floating point).
void atomic_add(std::atomic<double>& target, double amount) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + amount, std::memory_order_relaxed)) {
  }
}

} // namespace

// --- counter, gauge -----------------------------------------------------------------------------

void counter::increment(double amount) {
  if (!(amount > 0.0)) // negative, zero or NaN
    return;
  atomic_add(value_, amount);
}

double counter::value() const {
  return value_.load(std::memory_order_relaxed);
}

void gauge::set(double value) {
  value_.store(value, std::memory_order_relaxed);
}

void gauge::increment(double amount) {
  atomic_add(value_, amount);
}

void gauge::decrement(double amount) {
  atomic_add(value_, -amount);
}

double gauge::value() const {
  return value_.load(std::memory_order_relaxed);
}

// --- histogram ----------------------------------------------------------------------------------

histogram::histogram(bucket_boundaries bounds) : bounds_(std::move(bounds)) {
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (!std::isfinite(bounds_[i])) {
      std::ostringstream message;
      message << "histogram bucket bound " << i << " is " << bounds_[i]
              << ": bounds must be finite (the +Inf bucket is implicit; leave it out)";
      throw std::invalid_argument(message.str());
    }
    if (i > 0 && !(bounds_[i - 1] < bounds_[i])) {
      std::ostringstream message;
      message.precision(17);
      message << "histogram bucket bounds must increase strictly, but bound " << i - 1 << " is "
              << bounds_[i - 1] << " and bound " << i << " is " << bounds_[i];
      throw std::invalid_argument(message.str());
    }
  }
  counts_.assign(bounds_.size() + 1, 0);
}

void histogram::observe(double value) {
  // The first bound >= value (le is inclusive); NaN and values above every bound go to +Inf.
  // The bounds never change, so the search needs no lock.
  const std::size_t bucket =
      std::isnan(value)
          ? bounds_.size()
          : static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                     bounds_.begin());
  const std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

client_metric histogram::collect() const {
  client_metric result;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    result.cumulative_counts = counts_;
    result.sum = sum_;
    result.count = count_;
  }
  for (std::size_t i = 1; i < result.cumulative_counts.size(); ++i)
    result.cumulative_counts[i] += result.cumulative_counts[i - 1];
  result.bucket_bounds.reserve(bounds_.size() + 1);
  result.bucket_bounds = bounds_;
  result.bucket_bounds.push_back(std::numeric_limits<double>::infinity());
  return result;
}

bucket_boundaries histogram::exponential_buckets(double start, double factor, std::size_t count) {
  if (count < 1)
    throw std::invalid_argument("exponential_buckets needs a count of at least 1");
  if (!(start > 0.0))
    throw std::invalid_argument("exponential_buckets needs start > 0, got " +
                                std::to_string(start));
  if (!(factor > 1.0))
    throw std::invalid_argument("exponential_buckets needs factor > 1, got " +
                                std::to_string(factor));
  bucket_boundaries bounds(count);
  double bound = start;
  for (auto& entry : bounds) {
    entry = bound;
    bound *= factor;
  }
  return bounds;
}

bucket_boundaries histogram::linear_buckets(double start, double width, std::size_t count) {
  if (count < 1)
    throw std::invalid_argument("linear_buckets needs a count of at least 1");
  if (!(width > 0.0))
    throw std::invalid_argument("linear_buckets needs width > 0, got " + std::to_string(width));
  bucket_boundaries bounds(count);
  double bound = start;
  for (auto& entry : bounds) {
    entry = bound;
    bound += width;
  }
  return bounds;
}

// --- family -------------------------------------------------------------------------------------

void detail::check_metric_labels(const std::string& family_name, metric_type type,
                                 const labels& constant_labels, const labels& label_values) {
  for (const auto& entry : label_values) {
    check_label_name(family_name, type, entry.first);
    if (constant_labels.count(entry.first) != 0)
      throw std::invalid_argument("label \"" + entry.first + "\" on metric \"" + family_name +
                                  "\" is already one of the family's constant labels");
  }
}

template <class Metric>
family<Metric>::family(std::string name, std::string help, labels constant_labels, metric_type type)
    : name_(std::move(name)), help_(std::move(help)), constant_labels_(std::move(constant_labels)),
      type_(type) {
  check_metric_name(name_);
  if (type_ != type_of<Metric>())
    throw std::invalid_argument("family \"" + name_ + "\" holds " + type_name(type_of<Metric>()) +
                                "s but was declared as " + type_name(type_));
  if (help_.empty())
    throw std::invalid_argument("metric \"" + name_ +
                                "\" has no help text: say what it counts and in which unit");
  if (type_ == metric_type::counter && !ends_with(name_, "_total"))
    throw std::invalid_argument("counter \"" + name_ + "\" must be named with a _total suffix (\"" +
                                name_ + "_total\")");
  for (const auto& entry : constant_labels_)
    check_label_name(name_, type_, entry.first);
}

template <class Metric>
metric_family family<Metric>::collect() const {
  metric_family result;
  result.name = name_;
  result.help = help_;
  result.type = type_;
  const std::lock_guard<std::mutex> lock(mutex_);
  result.metrics.reserve(metrics_.size());
  for (const auto& [own_labels, metric] : metrics_) {
    client_metric collected = collect_metric(*metric);
    collected.label_values = constant_labels_;
    collected.label_values.insert(own_labels.begin(), own_labels.end());
    result.metrics.push_back(std::move(collected));
  }
  return result;
}

template class family<counter>;
template class family<gauge>;
template class family<histogram>;

// --- registry -----------------------------------------------------------------------------------

template <class Metric>
family<Metric>& registry::add(const std::string& name, const std::string& help,
                              const labels& constant_labels, metric_type type) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto wanted_series = series_names(name, type);
  for (const auto& existing : families_) {
    if (existing->name() == name) {
      if (existing->type() != type)
        throw std::invalid_argument("metric \"" + name + "\" is already registered as a " +
                                    type_name(existing->type()) + ", not a " + type_name(type));
      if (existing->constant_labels() != constant_labels)
        throw std::invalid_argument("metric \"" + name +
                                    "\" is already registered with other constant labels");
      return static_cast<family<Metric>&>(*existing);
    }
    const auto taken = series_names(existing->name(), existing->type());
    for (const auto& series : wanted_series) {
      if (std::find(taken.begin(), taken.end(), series) == taken.end())
        continue;
      std::string message = "metric \"" + name + "\" would write series \"";
      message += series;
      message += "\", which ";
      message += type_name(existing->type());
      message += " \"";
      message += existing->name();
      message += "\" already writes; rename one of them";
      throw std::invalid_argument(message);
    }
  }
  families_.push_back(std::make_unique<family<Metric>>(name, help, constant_labels, type));
  return static_cast<family<Metric>&>(*families_.back());
}

family<counter>& registry::add_counter(const std::string& name, const std::string& help,
                                       const labels& constant_labels) {
  return add<counter>(name, help, constant_labels, metric_type::counter);
}

family<gauge>& registry::add_gauge(const std::string& name, const std::string& help,
                                   const labels& constant_labels) {
  return add<gauge>(name, help, constant_labels, metric_type::gauge);
}

family<histogram>& registry::add_histogram(const std::string& name, const std::string& help,
                                           const labels& constant_labels) {
  return add<histogram>(name, help, constant_labels, metric_type::histogram);
}

std::vector<metric_family> registry::collect() const {
  // Families are never removed and live behind unique_ptrs, so the pointers may be collected
  // without holding the registry's lock (registration is not blocked by a slow scrape).
  std::vector<const family_base*> snapshot;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    snapshot.reserve(families_.size());
    for (const auto& entry : families_)
      snapshot.push_back(entry.get());
  }
  std::vector<metric_family> result;
  result.reserve(snapshot.size());
  for (const auto* entry : snapshot)
    result.push_back(entry->collect());
  return result;
}

// --- text format --------------------------------------------------------------------------------

void serialize(std::ostream& out, const std::vector<metric_family>& families) {
  std::string text;
  for (const auto& entry : families)
    append_family(text, entry);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

std::string expose(const registry& metrics) {
  std::string text;
  for (const auto& entry : metrics.collect())
    append_family(text, entry);
  return text;
}

std::string escape(const std::string& text, bool help) {
  std::string result;
  result.reserve(text.size());
  append_escaped(result, text, help);
  return result;
}

} // namespace herd::monitoring
