// Seeded fuzzing of `herd train --config FILE` through the real executable: every input ends with
// exit status 0 or 2, never a signal or a hang, and the executable agrees with config::load().
//
// To end quickly whatever the file says, every run adds --data.path=<an empty directory> (and
// --data.dataset=fashion-mnist): a configuration that loads then fails on the missing dataset
// (exit 2, "Fashion-MNIST not found"), one that does not fails with load()'s first message (exit 2
// as well). One run per shape of file also goes all the way, on the synthetic dataset, to exit 0.
#include "herd/config.hpp"

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <sys/stat.h>

#include "config_mutations.hpp"
#include "support/subprocess.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::testing::mutator;
using herd::testing::process_result;
using herd::testing::run_process;

constexpr auto run_deadline = std::chrono::seconds(60);

class cli_fuzz : public testing::Test {
protected:
  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_.file(name);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }

  // `herd train --config file`, pointed at an empty data directory.
  process_result run_without_data(const std::string& file) {
    const std::filesystem::path empty = dir_.path() / "no-data";
    std::filesystem::create_directories(empty);
    return run_process({HERD_BINARY, "train", "--config", file, "--data.dataset=fashion-mnist",
                        "--data.path=" + empty.string()},
                       run_deadline);
  }

  // What load() says about the same arguments: "" when it loads, else its first message.
  std::string first_error(const std::string& file) {
    try {
      herd::config::load(file, {"--data.dataset=fashion-mnist",
                                "--data.path=" + (dir_.path() / "no-data").string()});
      return {};
    } catch (const herd::config::invalid_config& invalid) {
      return invalid.errors().front().message;
    }
  }

  // Runs the executable on `file` and checks its exit against load()'s verdict.
  void check(const std::string& what, const std::string& file) {
    const auto start = std::chrono::steady_clock::now();
    const process_result result = run_without_data(file);
    slowest_ = std::max(slowest_, std::chrono::steady_clock::now() - start);
    const std::string tail = result.output.substr(0, 2000);
    ASSERT_FALSE(result.timed_out) << what << ": herd train hung\n" << tail;
    ASSERT_EQ(result.signal, 0) << what << ": herd train died of signal " << result.signal << "\n"
                                << tail;
    EXPECT_EQ(result.exit_code, 2) << what << "\n" << tail;
    const std::string expected = first_error(file);
    if (expected.empty()) {
      ++accepted_;
      EXPECT_NE(result.output.find("Fashion-MNIST not found"), std::string::npos)
          << what << ": load() accepts it, herd train says\n"
          << tail;
    } else {
      EXPECT_NE(result.output.find(expected), std::string::npos)
          << what << ": load() says " << expected << "\nherd train says\n"
          << tail;
    }
  }

  herd::testing::temp_directory dir_;
  int accepted_ = 0;
  std::chrono::steady_clock::duration slowest_{};
};

TEST_F(cli_fuzz, mutated_configurations_exit_with_0_or_2_never_a_signal) {
  const auto corpus = herd::testing::seed_corpus();
  mutator mutate(5150);
  for (int i = 0; i < 120; ++i) {
    const std::string text = mutate.mutate(corpus[mutate.below(corpus.size())], corpus);
    check("mutation " + std::to_string(i), write("fuzz.ini", text));
    if (HasFatalFailure())
      return;
  }
  for (int i = 0; i < 30; ++i)
    check("random text " + std::to_string(i), write("random.ini", mutate.random_text(400)));
  EXPECT_GT(accepted_, 5); // some mutations keep the file valid and reach the data
  std::cout << "slowest run "
            << std::chrono::duration_cast<std::chrono::milliseconds>(slowest_).count() << " ms\n";
}

TEST_F(cli_fuzz, each_finding_exits_with_2_and_a_message_not_a_signal) {
  check("deep nesting", write("deep.ini", "[model]\nhidden = " + std::string(25000, '[') + "\n"));
  check("NUL byte", write("nul.ini", std::string("[train]\nworkers = 2\0\n", 21)));
  check("duplicate key", write("twice.ini", "[train]\nworkers = 2\n[train]\nworkers = 3\n"));
  check("/dev/zero", "/dev/zero");
  const auto fifo = dir_.file("config.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  check("FIFO", fifo);
  check("huge value",
        write("huge.ini", "[train]\nalgorithm = \"" + std::string(900000, 'a') + "\"\n"));
}

// data.max-bytes reaches the dataset loader: Fashion-MNIST-shaped files (raw IDX: a magic number,
// big-endian dimensions, the bytes) of 10 + 10 images take 78,500 bytes in memory.
TEST_F(cli_fuzz, data_max_bytes_reaches_the_dataset_loader) {
  const auto idx = [](std::vector<std::uint32_t> dims) {
    std::string bytes{'\0', '\0', '\x08', static_cast<char>(dims.size())};
    std::size_t count = 1;
    for (std::uint32_t extent : dims) {
      for (int shift = 24; shift >= 0; shift -= 8)
        bytes += static_cast<char>((extent >> shift) & 0xFF);
      count *= extent;
    }
    return bytes + std::string(count, '\x01');
  };
  std::filesystem::create_directories(dir_.path() / "small");
  write("small/train-images-idx3-ubyte", idx({10, 28, 28}));
  write("small/t10k-images-idx3-ubyte", idx({10, 28, 28}));
  write("small/train-labels-idx1-ubyte", idx({10}));
  write("small/t10k-labels-idx1-ubyte", idx({10}));
  const auto result = run_process({HERD_BINARY, "train", "--data.path=" + dir_.file("small"),
                                   "--data.max-bytes=50000", "--train.workers=1"},
                                  run_deadline);
  EXPECT_EQ(result.exit_code, 2) << result.output;
  // Training images and labels take 39,250 bytes; the test images cross the limit.
  EXPECT_NE(result.output.find(dir_.file("small/t10k-images-idx3-ubyte") +
                               ": the header says 10 x 28 x 28 = 7840 values, 39200 bytes of "
                               "memory once loaded (78450 with the files before it), more than "
                               "data.max-bytes = 50000"),
            std::string::npos)
      << result.output;
}

TEST_F(cli_fuzz, a_crlf_configuration_with_a_byte_order_mark_trains) {
  std::string text = "\xEF\xBB\xBF";
  for (char c : herd::testing::read_file(std::string(HERD_CONFIG_DIR) + "/quickstart.ini"))
    text += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const auto file = write("windows.ini", text);
  const auto result =
      run_process({HERD_BINARY, "train", "--config", file, "--data.dataset=synthetic",
                   "--train.workers=2", "--train.epochs=1", "--train.max-seconds=0.5"},
                  run_deadline);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, 0);
  EXPECT_EQ(result.exit_code, 0) << result.output.substr(0, 2000);
}

} // namespace
