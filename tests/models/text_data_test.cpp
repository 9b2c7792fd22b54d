// Ragged token datasets (batches padded to their own longest text) and the fortunes preparation:
// parsing, de-duplication, the stratified split, the cache and the missing-package message. No
// fortunes package is needed: every file is written by the test.
#include "herd/dataset.hpp"
#include "herd/idx.hpp"
#include "herd/ops.hpp"
#include "herd/sequential.hpp"
#include "models/fortunes.hpp"
#include "models/sampler.hpp"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "support/forked_call.hpp"
#include "support/read_file.hpp"

namespace {

using herd::models::dataset;
using herd::models::fortune_corpus;
using herd::models::tensor;
using herd::testing::read_file;

#define EXPECT_CONTAINS(text, part)                                                                \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

// A fresh directory under the temporary directory, removed with the fixture.
struct temporary_dir {
  std::filesystem::path path;
  explicit temporary_dir(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("herd-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~temporary_dir() { std::filesystem::remove_all(path); }
};

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

// Random texts of 1 to 40 bytes, 3 classes, capped at `cap`.
dataset random_texts(std::size_t n, std::size_t cap, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> texts;
  std::vector<std::int32_t> labels;
  for (std::size_t i = 0; i < n; ++i) {
    std::string text(std::uniform_int_distribution<std::size_t>(1, 40)(rng), ' ');
    for (auto& c : text)
      c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    texts.push_back(text);
    labels.push_back(static_cast<std::int32_t>(i % 3));
  }
  return herd::models::make_text_dataset(texts, labels, 3, cap, "random");
}

// The same texts padded with -1 to the cap, as a dense dataset.
dataset dense_copy(const dataset& ragged) {
  dataset dense;
  dense.classes = ragged.classes;
  dense.labels = ragged.labels;
  dense.images = tensor({ragged.size(), ragged.max_length});
  for (std::size_t i = 0; i < ragged.size(); ++i)
    for (std::size_t t = 0; t < ragged.max_length; ++t)
      dense.images.row(i)[t] = t < ragged.length(i) ? ragged.tokens[ragged.offsets[i] + t] : -1.0f;
  return dense;
}

TEST(text_data, a_ragged_batch_is_the_dense_batch_without_the_padding_no_text_needs) {
  const auto ragged = random_texts(50, 32, 5); // some texts longer than the cap of 32
  const auto dense = dense_copy(ragged);
  const std::vector<std::size_t> indices{7, 3, 41, 0, 19};
  tensor x_ragged, x_dense;
  std::vector<std::int32_t> y_ragged, y_dense;
  herd::models::gather_batch(ragged, indices, x_ragged, y_ragged);
  herd::models::gather_batch(dense, indices, x_dense, y_dense);
  std::size_t longest = 0;
  for (auto i : indices)
    longest = std::max(longest, std::min<std::size_t>(ragged.length(i), 32));
  ASSERT_EQ(x_ragged.rows(), indices.size());
  ASSERT_EQ(x_ragged.cols(), longest);
  EXPECT_EQ(y_ragged, y_dense);
  for (std::size_t row = 0; row < indices.size(); ++row) {
    for (std::size_t t = 0; t < longest; ++t)
      EXPECT_EQ(x_ragged.row(row)[t], x_dense.row(row)[t]) << row << ", " << t;
    for (std::size_t t = longest; t < 32; ++t)
      EXPECT_EQ(x_dense.row(row)[t], -1.0f); // what the ragged batch leaves out is padding
  }
  EXPECT_EQ(ragged.features(), 32u);
  EXPECT_EQ(ragged.input_shape(), std::vector<std::size_t>{32});
}

TEST(text_data, evaluate_on_ragged_texts_equals_evaluate_on_their_dense_padded_copy) {
  const auto ragged = random_texts(230, 32, 6);
  const auto dense = dense_copy(ragged);
  herd::models::model_choice choice;
  choice.preset = "textcnn";
  const auto model = herd::models::build_model(choice, ragged.input_shape(), 3);
  const tensor params = model->initial_parameters(9);
  const auto work = model->make_workspace();
  const auto& ops = herd::kernels::cpu_ops();
  const auto on_ragged = model->evaluate(ops, params.data(), ragged, 64, *work);
  const auto on_dense = model->evaluate(ops, params.data(), dense, 64, *work);
  EXPECT_EQ(on_ragged.samples, 230u);
  EXPECT_EQ(on_ragged.correct, on_dense.correct);
  // The ragged texts are evaluated shortest first (cheaper batches): the same losses, summed in
  // another order.
  EXPECT_NEAR(on_ragged.mean_loss, on_dense.mean_loss, 1e-6 * on_dense.mean_loss);
}

TEST(text_data, a_subset_keeps_the_texts_in_their_form) {
  const auto ragged = random_texts(20, 16, 7);
  const auto part = herd::models::subset(ragged, {4, 2});
  ASSERT_EQ(part.size(), 2u);
  EXPECT_EQ(part.length(0), ragged.length(4));
  EXPECT_EQ(part.labels[1], ragged.labels[2]);
  EXPECT_EQ(part.max_length, 16u);
}

TEST(text_data, fortunes_split_on_lines_that_are_exactly_a_percent_sign) {
  temporary_dir dir("fortune-file");
  write_file(dir.path / "cookies", "  First text,\n two lines.\n%\n%\n100% sure\n%  \n"
                                   "%\r\nthird\n%\n   \n%\nlast without a separator");
  const auto texts = herd::models::split_fortunes(read_file(dir.path / "cookies"));
  // "%  " is not a separator (not exactly "%"); empty and blank texts are dropped.
  const std::vector<std::string> expected{"First text,\n two lines.", "100% sure\n%", "third",
                                          "last without a separator"};
  EXPECT_EQ(texts, expected);
}

TEST(text_data, a_text_is_kept_once_per_language_and_dropped_when_two_languages_have_it) {
  const auto corpus = herd::models::deduplicate(
      {"en", "de"}, {{"hello", "shared", "hello", "only en"}, {"hallo", "shared", "shared"}});
  const std::vector<std::string> texts{"hello", "only en", "hallo"};
  const std::vector<std::int32_t> labels{0, 0, 1};
  EXPECT_EQ(corpus.texts, texts);
  EXPECT_EQ(corpus.labels, labels);
  EXPECT_EQ(corpus.repeats, 1u);   // the second "hello"
  EXPECT_EQ(corpus.ambiguous, 1u); // "shared", counted once
}

TEST(text_data, the_split_holds_each_class_in_proportion_and_depends_on_the_seed_alone) {
  std::vector<std::int32_t> labels;
  for (int label = 0; label < 3; ++label)
    labels.insert(labels.end(), static_cast<std::size_t>(100 * (label + 1)), label);
  const auto test = herd::models::stratified_test_choice(labels, 3, 0.1, 4);
  std::map<std::int32_t, int> chosen;
  for (std::size_t i = 0; i < labels.size(); ++i)
    chosen[labels[i]] += test[i] ? 1 : 0;
  EXPECT_EQ(chosen[0], 10);
  EXPECT_EQ(chosen[1], 20);
  EXPECT_EQ(chosen[2], 30);
  EXPECT_EQ(herd::models::stratified_test_choice(labels, 3, 0.1, 4), test);
  EXPECT_NE(herd::models::stratified_test_choice(labels, 3, 0.1, 5), test);
}

// data.max-texts: exactly that many, in proportion (classes of 7, 11 and 13 samples: rounding
// each share alone would give 4 + 6 + 7 = 17 of 16, and 0 of 1).
TEST(text_data, a_subset_holds_exactly_the_count_asked_for_in_proportion) {
  std::vector<std::int32_t> labels;
  for (int label = 0; label < 3; ++label)
    labels.insert(labels.end(),
                  static_cast<std::size_t>(label == 0   ? 7
                                           : label == 1 ? 11
                                                        : 13),
                  label);
  for (std::size_t count : {0u, 1u, 8u, 15u, 16u, 30u, 31u, 40u}) {
    const auto kept = herd::models::stratified_subset(labels, 3, count, 9);
    std::map<std::int32_t, std::size_t> chosen;
    for (std::size_t i = 0; i < labels.size(); ++i)
      chosen[labels[i]] += kept[i] ? 1 : 0;
    EXPECT_EQ(chosen[0] + chosen[1] + chosen[2], std::min<std::size_t>(count, 31)) << count;
    const std::size_t sizes[] = {7, 11, 13};
    for (std::int32_t label = 0; label < 3; ++label) {
      const double share =
          static_cast<double>(sizes[label] * std::min<std::size_t>(count, 31)) / 31;
      EXPECT_LE(std::abs(static_cast<double>(chosen[label]) - share), 1.0) << count;
    }
  }
}

fortune_corpus small_corpus() {
  return herd::models::deduplicate({"en", "ru"}, {{"a", "bb"}, {"\xd0\xb4\xd0\xb0"}});
}

TEST(text_data, the_cache_reads_back_what_was_written_for_the_same_inputs) {
  temporary_dir dir("fortune-cache");
  const auto path = (dir.path / "sub" / "fortunes.cache").string();
  const auto written = small_corpus();
  herd::models::write_corpus_cache(path, written, 42);
  const auto read = herd::models::read_corpus_cache(path, 42);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->texts, written.texts);
  EXPECT_EQ(read->labels, written.labels);
  EXPECT_EQ(read->languages, written.languages);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path / "sub"), {}), 1);
}

TEST(text_data, the_cache_is_refused_when_the_inputs_changed_or_the_file_is_damaged) {
  temporary_dir dir("fortune-cache-bad");
  const auto path = (dir.path / "fortunes.cache").string();
  herd::models::write_corpus_cache(path, small_corpus(), 42);
  EXPECT_FALSE(herd::models::read_corpus_cache(path, 43).has_value()); // another fingerprint
  const std::string bytes = read_file(path);
  auto flipped = bytes;
  flipped.back() = static_cast<char>(flipped.back() ^ 1);
  write_file(path, flipped);
  EXPECT_FALSE(herd::models::read_corpus_cache(path, 42).has_value()); // checksum
  write_file(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_FALSE(herd::models::read_corpus_cache(path, 42).has_value()); // truncated
  write_file(path, "not a cache");
  EXPECT_FALSE(herd::models::read_corpus_cache(path, 42).has_value());
  EXPECT_FALSE(herd::models::read_corpus_cache((dir.path / "absent").string(), 42).has_value());
}

// Two jobs of one service preparing the corpus at once each write a temporary file of their own.
TEST(text_data, threads_that_write_the_cache_at_once_leave_one_whole_file) {
  temporary_dir dir("fortune-cache-race");
  const auto path = (dir.path / "fortunes.cache").string();
  const auto written = small_corpus();
  std::vector<std::string> failures(2);
  std::vector<std::thread> writers;
  for (std::size_t t = 0; t < failures.size(); ++t)
    writers.emplace_back([&, t] {
      try {
        for (int i = 0; i < 200; ++i)
          herd::models::write_corpus_cache(path, written, 42);
      } catch (const std::exception& failed) {
        failures[t] = failed.what();
      }
    });
  for (auto& writer : writers)
    writer.join();
  EXPECT_EQ(failures, std::vector<std::string>(2)) << "a writer failed";
  ASSERT_TRUE(herd::models::read_corpus_cache(path, 42).has_value());
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path), {}), 1);
}

// A FIFO at the cache's path is no cache, and reading it does not wait for a writer.
TEST(text_data, a_fifo_at_the_caches_path_is_passed_over_without_waiting) {
  temporary_dir dir("fortune-cache-fifo");
  const auto path = (dir.path / "fortunes.cache").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  const auto outcome = herd::testing::run_forked(
      [&path] { return herd::models::read_corpus_cache(path, 42).has_value() ? "read" : "none"; },
      std::chrono::seconds(20));
  ASSERT_TRUE(outcome.finished) << "reading a FIFO as the cache hung";
  EXPECT_EQ(outcome.report, "none");
  herd::models::write_corpus_cache(path, small_corpus(), 42); // renamed over the FIFO
  EXPECT_TRUE(herd::models::read_corpus_cache(path, 42).has_value());
}

TEST(text_data, missing_packages_are_named_with_the_line_that_installs_them) {
  temporary_dir dpkg("fortune-dpkg");
  std::filesystem::create_directories(dpkg.path / "info");
  for (const auto& package :
       {"fortunes", "fortunes-de", "fortunes-it", "fortunes-es", "fortunes-cs"})
    write_file(dpkg.path / "info" / (std::string(package) + ".list"), "/.\n/usr\n");
  herd::models::fortune_options options;
  options.dpkg_dir = dpkg.path.string();
  options.cache_dir = (dpkg.path / "cache").string();
  try {
    herd::models::load_fortunes(options);
    FAIL() << "loaded without fortunes-pl and fortunes-ru";
  } catch (const herd::models::data_error& missing) {
    EXPECT_CONTAINS(missing.what(), "needs the Debian packages fortunes-pl fortunes-ru");
    EXPECT_CONTAINS(missing.what(), "apt-get install fortunes-pl fortunes-ru");
  }
}

TEST(text_data, a_file_list_yields_regular_fortune_files_only) {
  temporary_dir root("fortune-list");
  std::filesystem::create_directories(root.path / "info");
  // fortune_files keeps paths under /usr/share/games only, so the test names real paths there
  // when they exist and checks the rule on what the list says otherwise: a list of nothing
  // installable gives no files, and a missing list gives nullopt.
  write_file(root.path / "info" / "example.list",
             "/.\n/usr/share/games/fortunes/no-such-file\n/usr/share/games/fortunes/x.dat\n");
  const auto files = herd::models::fortune_files("example", root.path.string());
  ASSERT_TRUE(files.has_value());
  EXPECT_TRUE(files->empty());
  EXPECT_FALSE(herd::models::fortune_files("absent", root.path.string()).has_value());
}

} // namespace
