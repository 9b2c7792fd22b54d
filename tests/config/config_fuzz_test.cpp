// Seeded fuzzing of the configuration loader: thousands of mutations of the shipped configurations
// and of random byte strings (deep nesting, NUL bytes, huge values, CR, byte order marks, broken
// headers), through from_ini(), load() from a file, and command-line overrides. Every input must
// load or be refused with invalid_config: never a crash, another exception or a hang (each input
// must finish within a second; ctest's timeout catches one that never does).
#include "herd/config.hpp"

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <iostream>
#include <typeinfo>

#include "config_mutations.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::config::invalid_config;
using herd::testing::mutator;
using herd::testing::seed_corpus;
using herd::testing::tokens;
using clock_type = std::chrono::steady_clock;

// Tallies outcomes and fails the test on anything but a configuration or invalid_config.
class verdicts {
public:
  template <class Load>
  void check(const std::string& what, Load&& load) {
    const auto start = clock_type::now();
    try {
      load();
      ++loaded;
    } catch (const invalid_config& invalid) {
      ++refused;
      if (invalid.errors().empty())
        ADD_FAILURE() << what << ": invalid_config without errors";
    } catch (const std::exception& other) {
      ADD_FAILURE() << what << ": threw " << typeid(other).name() << ": " << other.what();
    } catch (...) {
      ADD_FAILURE() << what << ": threw something that is not a std::exception";
    }
    // Printed, not asserted (a loaded machine makes any bound flaky); a hang meets the test's
    // timeout.
    slowest = std::max(slowest, clock_type::now() - start);
  }

  int loaded = 0;
  int refused = 0;
  clock_type::duration slowest{};
};

TEST(config_fuzz, mutated_shipped_configurations_load_or_are_refused) {
  const auto corpus = seed_corpus();
  ASSERT_GE(corpus.size(), 5u);
  herd::testing::temp_directory dir;
  const std::string file = dir.file("fuzz.ini");
  mutator mutate(20240611);
  verdicts outcome;
  for (int i = 0; i < 15000; ++i) {
    const std::string text = mutate.mutate(corpus[mutate.below(corpus.size())], corpus);
    const std::string what = "mutation " + std::to_string(i);
    outcome.check(what, [&] { herd::config::from_ini(text, "fuzz"); });
    if (i % 8 == 0) { // and the file path: read, size check, the same front end
      std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
      outcome.check(what + " from a file", [&] { herd::config::load(file, {}); });
    }
  }
  // The mutations are neither all harmless nor all fatal.
  EXPECT_GT(outcome.loaded, 1000);
  EXPECT_GT(outcome.refused, 5000);
  std::cout << "loaded " << outcome.loaded << ", refused " << outcome.refused << ", slowest "
            << std::chrono::duration_cast<std::chrono::milliseconds>(outcome.slowest).count()
            << " ms\n";
}

TEST(config_fuzz, random_byte_strings_load_or_are_refused) {
  mutator random(7);
  verdicts outcome;
  for (int i = 0; i < 8000; ++i) {
    const std::string text = random.random_text(i % 10 == 0 ? 20000 : 600);
    outcome.check("random text " + std::to_string(i),
                  [&] { herd::config::from_ini(text, "fuzz"); });
  }
  EXPECT_GT(outcome.refused, 4000);
}

TEST(config_fuzz, random_overrides_load_or_are_refused) {
  mutator random(11);
  const std::vector<std::string> keys{"train.workers", "train.lr",       "model.hidden",
                                      "data.path",     "data.max-bytes", "imbalance.workers",
                                      "cluster.token", "bogus.key",      ""};
  verdicts outcome;
  for (int i = 0; i < 5000; ++i) {
    std::vector<std::string> overrides;
    for (std::size_t n = random.below(4); n > 0; --n) {
      std::string value =
          random.below(2) == 0 ? random.random_text(64) : tokens()[random.below(tokens().size())];
      if (random.below(3) == 0)
        value = random.mutate(value, {value + "x"});
      overrides.push_back("--" + keys[random.below(keys.size())] + "=" + value);
    }
    outcome.check("overrides " + std::to_string(i), [&] { herd::config::load("", overrides); });
  }
  EXPECT_GT(outcome.refused, 1000);
}

// Inputs shaped to hit each bound: nesting at and past the limit in every form, a megabyte of
// one thing, NULs and CRs at the ends, thousands of keys and sections.
TEST(config_fuzz, pathological_inputs_load_or_are_refused) {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const int depth : {31, 32, 33, 1000, 100000}) {
    const std::string d = std::to_string(depth);
    inputs.push_back({"lists " + d, "[model]\nhidden = " + std::string(depth, '[')});
    inputs.push_back({"closed lists " + d,
                      "[model]\nhidden = " + std::string(depth, '[') + std::string(depth, ']')});
    inputs.push_back({"maps " + d, "[model]\nhidden = " + std::string(depth, '{')});
    inputs.push_back({"map keys " + d, "[m]\n" + [&] {
                        std::string text;
                        for (int i = 0; i < depth && text.size() < 900000; ++i)
                          text += "a {";
                        return text;
                      }()});
    inputs.push_back({"header dots " + d, "[a" + std::string(depth, '.') + "b]\nx = 1\n"});
    inputs.push_back({"header groups " + d, "[" + [&] {
                        std::string text = "a";
                        for (int i = 0; i < depth && text.size() < 900000; ++i)
                          text += ".a";
                        return text;
                      }() + "]\nx = 1\n"});
    inputs.push_back({"uri " + d, "[m]\nx = [<\nhttp://a;b>, " + std::string(depth, '[')});
  }
  const std::string megabyte(1 << 20, 'x');
  inputs.push_back({"one long value", "[data]\npath = \"" + megabyte.substr(0, 1000000) + "\"\n"});
  inputs.push_back({"one long key", "[data]\n" + megabyte.substr(0, 1000000) + " = 1\n"});
  inputs.push_back({"one long comment", "; " + megabyte.substr(0, 1000000) + "\n"});
  inputs.push_back({"over the limit", megabyte + "x"});
  inputs.push_back({"only NULs", std::string(4096, '\0')});
  inputs.push_back({"NUL at the end", std::string("[train]\nworkers = 2\n") + '\0'});
  inputs.push_back({"only CRs", std::string(4096, '\r')});
  inputs.push_back({"BOM only", "\xEF\xBB\xBF"});
  inputs.push_back({"BOM twice", "\xEF\xBB\xBF\xEF\xBB\xBF[train]\n"});
  inputs.push_back({"CRLF in a string", "[data]\npath = \"a\r\nb\"\n"});
  std::string keys = "[train]\n";
  std::string sections;
  for (int i = 0; i < 20000; ++i) {
    keys += "k" + std::to_string(i) + " = " + std::to_string(i) + "\n";
    sections += "[train]\nworkers = " + std::to_string(i % 8 + 1) + "\n";
  }
  inputs.push_back({"20000 keys", keys});
  inputs.push_back({"20000 repeated sections", sections});
  std::string list = "[model]\nhidden = [";
  while (list.size() < 1000000)
    list += "1, ";
  inputs.push_back({"a long list", list + "1]\n"});
  verdicts outcome;
  for (const auto& [what, text] : inputs)
    outcome.check(what, [&] { herd::config::from_ini(text, "fuzz"); });
  for (const int depth : {33, 100000}) // and on the command line
    outcome.check("override nesting " + std::to_string(depth),
                  [&] { herd::config::load("", {"--model.hidden=" + std::string(depth, '[')}); });
  EXPECT_GT(outcome.refused, 40);
}

} // namespace
