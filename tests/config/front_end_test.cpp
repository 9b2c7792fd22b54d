// The configuration front end: what load() and from_ini() refuse, or repair, before CAF's parser
// sees a text. One test per finding of a red-team trial (deep nesting, NUL bytes, duplicate keys,
// CRLF and a byte order mark, FIFOs and devices, huge values), each naming file, line and key.
// Inputs that crashed or blocked the loader are loaded in a forked child under a deadline, so a
// regression fails the test instead of killing or hanging the test binary.
#include "herd/config.hpp"

#include <chrono>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/stat.h>

#include "support/forked_call.hpp"
#include "support/read_file.hpp"
#include "support/temp_directory.hpp"

namespace {

using herd::config::invalid_config;
using herd::config::load;
using herd::config::from_ini;
using herd::testing::read_file;
using testing::AllOf;
using testing::HasSubstr;
using testing::Not;

constexpr auto child_deadline = std::chrono::seconds(20);

class front_end : public testing::Test {
protected:
  std::string write(const std::string& name, const std::string& text) {
    auto path = dir_.file(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // Every error load() reports, one a line; fails the test if load() succeeds.
  static std::string errors_of(const std::string& file, const std::vector<std::string>& args) {
    try {
      load(file, args);
    } catch (const invalid_config& invalid) {
      std::string all;
      for (const auto& error : invalid.errors())
        all += error.message + "\n";
      return all;
    }
    ADD_FAILURE() << "expected load() to refuse the configuration";
    return {};
  }

  // The keys of the errors load() reports.
  static std::vector<std::string> error_keys(const std::string& file) {
    try {
      load(file, {});
    } catch (const invalid_config& invalid) {
      std::vector<std::string> keys;
      for (const auto& error : invalid.errors())
        keys.push_back(error.key);
      return keys;
    }
    return {};
  }

  // load() in a child under a deadline: "accepted", or "refused:" and every message.
  static herd::testing::forked_outcome load_in_child(const std::string& file,
                                                     const std::vector<std::string>& args = {}) {
    return herd::testing::run_forked(
        [&] {
          try {
            load(file, args);
            return std::string("accepted");
          } catch (const invalid_config& invalid) {
            std::string all = "refused:";
            for (const auto& error : invalid.errors())
              all += "\n" + error.message;
            return all;
          }
        },
        child_deadline);
  }

  herd::testing::temp_directory dir_;
};

// The child returned normally: no crash, no hang, no exception other than invalid_config.
#define EXPECT_CHILD_FINISHED(outcome)                                                             \
  EXPECT_TRUE((outcome).finished && (outcome).exit_code == 0)                                      \
      << "the load "                                                                               \
      << ((outcome).signal == SIGKILL ? "hung (killed at the deadline)"                            \
          : (outcome).signal != 0     ? "crashed with signal " + std::to_string((outcome).signal)  \
                                      : (outcome).report)

// -- nesting --------------------------------------------------------------------------------------

TEST_F(front_end, deep_nesting_in_a_file_is_refused_before_the_parser_sees_it) {
  const auto lists = write("lists.ini", "[model]\nhidden = " + std::string(25000, '[') + "\n");
  const auto maps = write("maps.ini", "[train]\n\nx = " + std::string(25000, '{') + "\n");
  const auto header = write("header.ini", "[a" + std::string(25000, '.') + "b]\nx = 1\n");
  for (const auto& [file, line] : {std::pair{lists, 2}, std::pair{maps, 3}, std::pair{header, 1}}) {
    SCOPED_TRACE(file);
    const auto outcome = load_in_child(file);
    EXPECT_CHILD_FINISHED(outcome);
    EXPECT_THAT(outcome.report, AllOf(HasSubstr("refused:"),
                                      HasSubstr(file + ": line " + std::to_string(line) + ": "),
                                      HasSubstr("nested more than 32 levels deep")));
  }
}

TEST_F(front_end, deep_nesting_on_the_command_line_and_in_handed_over_text_is_refused) {
  const auto outcome = load_in_child("", {"--model.hidden=" + std::string(200000, '[')});
  EXPECT_CHILD_FINISHED(outcome);
  EXPECT_THAT(outcome.report,
              AllOf(HasSubstr("model.hidden = [[[["), HasSubstr("(200000 bytes) (command line)"),
                    HasSubstr("nested more than 32 levels deep")));
  const auto handed = herd::testing::run_forked(
      [] {
        try {
          from_ini("[model]\nhidden = " + std::string(25000, '[') + "\n", "the settings");
          return std::string("accepted");
        } catch (const invalid_config& invalid) {
          return std::string(invalid.what());
        }
      },
      child_deadline);
  EXPECT_CHILD_FINISHED(handed);
  EXPECT_THAT(handed.report, HasSubstr("the settings: line 2: nested more than 32"));
}

TEST_F(front_end, nesting_up_to_the_limit_reaches_the_parser) {
  // 32 levels is a (wrong) value the converter names; 33 never reaches the parser.
  const auto at_limit = errors_of(
      write("32.ini", "[model]\nhidden = " + std::string(32, '[') + std::string(32, ']') + "\n"),
      {});
  EXPECT_THAT(at_limit, AllOf(HasSubstr("model.hidden"), HasSubstr("expected a list of integers"),
                              Not(HasSubstr("nested"))));
  const auto over = errors_of(
      write("33.ini", "[model]\nhidden = " + std::string(33, '[') + std::string(33, ']') + "\n"),
      {});
  EXPECT_THAT(over, HasSubstr("nested more than 32 levels deep (33 or more)"));
}

TEST_F(front_end, brackets_in_strings_and_comments_do_not_count_as_nesting) {
  const std::string deep(40, '[');
  const auto file = write("quoted.ini", "; " + deep + "\n[data]\npath = \"/tmp/" + deep + "\" ; " +
                                            deep + "\n[model]\nhidden = [8] ; {{{\n");
  const auto config = load(file, {});
  EXPECT_EQ(config.data.path, "/tmp/" + deep);
  EXPECT_EQ(config.model.hidden, std::vector<int>{8});
}

// -- bytes that are not INI text ------------------------------------------------------------------

TEST_F(front_end, a_nul_byte_is_refused_naming_its_line) {
  const auto file =
      write("nul.ini", std::string("[train]\nworkers = 2\nlr = 0.1\0\nepochs = 1\n", 40));
  EXPECT_THAT(errors_of(file, {}), AllOf(HasSubstr(file + ": line 3: a NUL byte"),
                                         HasSubstr("a configuration file is text")));
  EXPECT_THROW(from_ini(std::string("[train]\0workers = 2\n", 20), "the settings"),
               invalid_config);
}

TEST_F(front_end, crlf_line_ends_and_a_byte_order_mark_are_accepted) {
  const std::string original = read_file(std::string(HERD_CONFIG_DIR) + "/quickstart.ini");
  ASSERT_FALSE(original.empty());
  std::string crlf;
  for (char c : original)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const std::string bom = "\xEF\xBB\xBF";
  const auto expected = herd::config::to_ini(from_ini(original, "quickstart"));
  for (const auto& [name, text] :
       {std::pair{"crlf.ini", crlf}, std::pair{"bom.ini", bom + original},
        std::pair{"both.ini", bom + crlf}}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(herd::config::to_ini(load(write(name, text), {})), expected);
  }
  EXPECT_EQ(herd::config::to_ini(from_ini(bom + crlf, "handed over")), expected);
}

TEST_F(front_end, a_carriage_return_that_ends_no_line_is_named) {
  const auto file = write("old-mac.ini", "[train]\nworkers = 2\rlr = 0.1\n");
  EXPECT_THAT(errors_of(file, {}),
              AllOf(HasSubstr(file + ": line 2: a carriage return (CR) that does not end a line"),
                    HasSubstr("LF or CRLF")));
  // On the command line a value is not a line: a path may hold a CR.
  EXPECT_EQ(load("", {"--data.path=/tmp/a\rb"}).data.path, "/tmp/a\rb");
}

// -- a text that ends inside a value, and numbers in other bases -----------------------------------

// CAF's parser drops what it was reading at the end of a text, and the section around it, without
// a word: a file cut short on its last line trained the defaults. Each is now named, at its line.
TEST_F(front_end, a_file_that_ends_inside_a_value_is_refused_naming_the_line) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[train]\nworkers = 2\nalgorithm = \"solo", "line 3: a quoted value (opened by \") does "
                                                   "not close: the file ends inside it"},
      {"[model]\nhidden = [64, 32\n", "line 2: a list or map that does not close"},
      {"[train]\nworkers = 2\nbogus = [1\n", "line 3: a list or map that does not close"},
      {"[train]\nworkers = 2\nx = {a = 1", "line 3: a list or map that does not close"},
      {"[train]\nworkers = 2\nepochs =", "line 3: epochs has no value after its '='"},
      {"[train]\nworkers = 2\nepochs", "line 3: epochs has no value: write epochs = VALUE"},
      {"[train]\nworkers = 2\n[data", "line 3: the section header [data has no closing ]"},
      {"[train]\nworkers = 2\nx = <abc", "line 3: a <...> value that does not close"},
      // Values CAF stops reading at the end of the text: with a line end after them, CAF's own
      // syntax error.
      {"[train]\nworkers = 2\nx = tr", "line 3, at its end: syntax error"},
      {"[train]\nworkers = 2\nlr = 1e-", "line 3, at its end: syntax error"}};
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    const auto file = write("cut.ini", text);
    EXPECT_THAT(errors_of(file, {}), HasSubstr(file + ": " + expected));
  }
}

// The same mistakes inside a file are named at their own line (CAF names the next one, as an
// "unexpected newline").
TEST_F(front_end, a_value_cut_by_its_line_end_is_named_at_its_line) {
  const auto quoted = write("quoted.ini", "[train]\nalgorithm = \"solo\nworkers = 2\n");
  EXPECT_THAT(errors_of(quoted, {}),
              HasSubstr(quoted + ": line 2: a quoted value (opened by \") does not close on this "
                                 "line"));
  const auto empty = write("empty.ini", "[train]\nepochs = ; later\nworkers = 2\n");
  EXPECT_THAT(errors_of(empty, {}), HasSubstr(empty + ": line 2: epochs has no value"));
  const auto bare = write("bare.ini", "[train]\nworkers = tr\nepochs = 1\n");
  EXPECT_THAT(errors_of(bare, {}),
              HasSubstr(bare + ": line 2, at its end: syntax error (unexpected newline)"));
  const auto keyless = write("keyless.ini", "[train]\nworkers = 2\n= 3\n");
  EXPECT_THAT(errors_of(keyless, {}), HasSubstr(keyless + ": line 3: an '=' with no key before it"));
  const auto header = write("header.ini", "[train\nworkers = 2\n");
  EXPECT_THAT(errors_of(header, {}), HasSubstr(header + ": line 1: the section header [train has"));
  // Other INI dialects comment with #; here it is a syntax error, said as such.
  const auto hash = write("hash.ini", "[train]\n# two workers\nworkers = 2\n");
  EXPECT_THAT(errors_of(hash, {}),
              HasSubstr(hash + ": line 2: a line that starts with #: comments here start with ;"));
}

// What other INI dialects allow and CAF's parser stops at is named with the key and what to write
// instead; a line none of them fits keeps the general reminder.
TEST_F(front_end, a_syntax_error_of_another_ini_dialect_says_what_to_write_instead) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[train]\nworkers = 4\nalgorithm = solo\n",
       "line 3, column 14: syntax error (unexpected character); train.algorithm = solo: strings "
       "are written in double quotes: algorithm = \"solo\""},
      {"[train]\nworkers = 4 # four\n",
       "train.workers: comments start with ; (not #): workers = 4 ; ..."},
      {"[train]\nalgorithm = \"a#b\" # x\n",
       "train.algorithm: comments start with ; (not #): algorithm = \"a#b\" ; ..."},
      {"[data]\nbucket-by-length = yes\n", "data.bucket-by-length = yes: expected true or false"},
      {"[model]\nhidden = 256, 128\n",
       "model.hidden = 256, 128: lists are written in brackets: hidden = [256, 128]"},
      {"[train]\nworkers = four\n", "train.workers = four: expected an integer"},
      {"[train]\nlr = fast\n", "train.lr = fast: expected a number"},
      // CAF names the next line; the hint is for the line it ends.
      {"[train]\nworkers = tr\nepochs = 1\n",
       "line 2, at its end: syntax error (unexpected newline); train.workers = tr: expected an "
       "integer"}};
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    const auto file = write("dialect.ini", text);
    EXPECT_THAT(errors_of(file, {}), HasSubstr(expected));
  }
  const auto unknown = write("unknown.ini", "[train]\nspeed = fast\n");
  EXPECT_THAT(errors_of(unknown, {}), HasSubstr("files use INI syntax"));
}

// CAF reads 010 as octal (8), 0x10 as hex: a zero-padded seed gave another run. Refused, in a file
// and on the command line; a zero, decimals, exponents, paths and strings with such digits pass.
TEST_F(front_end, numbers_with_a_leading_zero_are_refused_not_read_in_another_base) {
  const auto file = write("octal.ini", "[train]\nworkers = 2\nseed = 0042\n");
  EXPECT_THAT(errors_of(file, {}),
              HasSubstr(file + ": line 3: train.seed = 0042: a leading 0 would read this number "
                               "as octal"));
  const auto listed = write("listed.ini", "[model]\nhidden = [256,\n064]\n");
  EXPECT_THAT(errors_of(listed, {}),
              HasSubstr(listed + ": line 3: model.hidden = 064: a leading 0"));
  const auto mapped = write("mapped.ini", "train {\n  seed = 0042\n}\n");
  EXPECT_THAT(errors_of(mapped, {}), HasSubstr(mapped + ": line 2: 0042: a leading 0"));
  for (const char* option : {"--train.workers=010", "--train.lr=0x10", "--metrics.port=09464",
                             "--model.hidden=064,32", "--train.seed=-0b1"})
    EXPECT_THAT(errors_of("", {option}), HasSubstr("a leading 0 would read this number")) << option;
  const auto fine = write("fine.ini", "[train]\nseed = 0\nlr = 0.05\nweight-decay = 1e-05\n"
                                      "[data]\npath = \"/data/007\"\n");
  const auto loaded = load(fine, {"--train.momentum=0.09", "--checkpoint.dir=/runs/007"});
  EXPECT_EQ(loaded.train.seed, 0u);
  EXPECT_DOUBLE_EQ(loaded.train.lr, 0.05);
  EXPECT_DOUBLE_EQ(loaded.train.weight_decay, 1e-05);
  EXPECT_EQ(loaded.data.path, "/data/007");
  EXPECT_EQ(loaded.checkpoint.dir, "/runs/007");
  // On the command line a value that is not a number is a string, whatever its digits.
  for (const char* path : {"007_data", "0001.npy", "0b_cache", "run,01"})
    EXPECT_EQ(load("", {std::string("--data.path=") + path}).data.path, path);
}

// -- duplicate keys -------------------------------------------------------------------------------

TEST_F(front_end, a_key_set_twice_in_a_section_is_refused_naming_both_lines) {
  const auto file = write("twice.ini", "[train]\nworkers = 2\nlr = 0.1\nworkers = 3\n");
  EXPECT_THAT(errors_of(file, {}),
              HasSubstr("train.workers is set twice (in " + file + ", lines 2 and 4)"));
  EXPECT_EQ(error_keys(file), std::vector<std::string>{"train.workers"});
}

TEST_F(front_end, a_key_set_again_in_a_repeated_section_is_refused_naming_both_lines) {
  const auto file = write("repeated.ini", "[train]\nworkers = 2\n[data]\ndataset = \"synthetic\"\n"
                                          "[train]\nlr = 0.1\n  workers   =   3\n");
  EXPECT_THAT(errors_of(file, {}),
              HasSubstr("train.workers is set twice (in " + file + ", lines 2 and 7)"));
  // A repeated section that sets other keys is fine: the sections merge.
  const auto merged = load(write("merged.ini", "[train]\nworkers = 2\n[train]\nlr = 0.25\n"), {});
  EXPECT_EQ(merged.train.workers, 2);
  EXPECT_DOUBLE_EQ(merged.train.lr, 0.25);
}

TEST_F(front_end, keys_are_compared_as_the_parser_reads_them) {
  // The parser keeps '-' and '_' apart: sync_every is another (unknown) key, never silently the
  // same one; a map value set twice is a duplicate too.
  EXPECT_THAT(errors_of(write("underscore.ini", "[solo]\nsync-every = 3\nsync_every = 4\n"), {}),
              AllOf(HasSubstr("unknown key solo.sync_every"),
                    HasSubstr("did you mean solo.sync-every?"), Not(HasSubstr("set twice"))));
  const auto maps = write("maps.ini", "[model]\nextra { a = 1 }\nextra = { b = 2 }\n");
  EXPECT_THAT(errors_of(maps, {}),
              HasSubstr("model.extra is set twice (in " + maps + ", lines 2 and 3)"));
  const auto global = write("global.ini", "workers = 1\n[global]\nworkers = 2\n");
  EXPECT_THAT(errors_of(global, {}), HasSubstr("workers is set twice"));
}

// -- files that are not regular files -------------------------------------------------------------

TEST_F(front_end, a_fifo_is_refused_without_blocking) {
  const auto fifo = dir_.file("config.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto outcome = load_in_child(fifo);
  EXPECT_CHILD_FINISHED(outcome);
  EXPECT_THAT(outcome.report,
              AllOf(HasSubstr("cannot read config file " + fifo), HasSubstr("a FIFO")));
}

TEST_F(front_end, dev_zero_is_refused_without_reading_it) {
  const auto outcome = load_in_child("/dev/zero");
  EXPECT_CHILD_FINISHED(outcome);
  EXPECT_THAT(outcome.report, AllOf(HasSubstr("cannot read config file /dev/zero"),
                                    HasSubstr("a character device"), HasSubstr("regular file")));
  EXPECT_THAT(errors_of(dir_.path().string(), {}), HasSubstr("it is a directory"));
}

// Scripts say "no config file" as --config /dev/null: the defaults, with the overrides on them.
TEST_F(front_end, dev_null_is_an_empty_file) {
  EXPECT_EQ(load_in_child("/dev/null", {"--train.workers=3"}).report, "accepted");
  EXPECT_EQ(load("/dev/null", {"--train.workers=3"}).train.workers, 3);
}

TEST_F(front_end, a_fifo_named_as_a_tls_file_is_refused_without_blocking) {
  const auto fifo = dir_.file("ca.pem");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto outcome = load_in_child(
      "", {"--cluster.tls-ca=" + fifo, "--cluster.tls-cert=" + fifo, "--cluster.tls-key=" + fifo});
  EXPECT_CHILD_FINISHED(outcome);
  EXPECT_THAT(
      outcome.report,
      HasSubstr("cluster.tls-ca = \"" + fifo +
                "\" (command line): cannot read this file: it is a FIFO (named pipe), not a "
                "regular file"));
}

// -- sizes ----------------------------------------------------------------------------------------

TEST_F(front_end, a_file_over_a_mebibyte_is_refused_naming_the_limit) {
  const std::string comment = "; " + std::string(1000, 'x') + "\n";
  std::string big = "[train]\nworkers = 2\n";
  while (big.size() <= (std::size_t{2} << 20))
    big += comment;
  const auto file = write("big.ini", big);
  EXPECT_THAT(errors_of(file, {}), AllOf(HasSubstr("cannot read config file " + file),
                                         HasSubstr("1048576 bytes (1 MiB)"),
                                         HasSubstr(std::to_string(big.size()) + " bytes")));
  EXPECT_THROW(from_ini(big, "the settings"), invalid_config);
}

TEST_F(front_end, thousands_of_settings_are_refused_before_the_parser_spends_minutes_on_them) {
  // CAF's parser takes time quadratic in a section's settings: 20,000 took 9 s, and a mebibyte
  // holds 150,000.
  std::string many = "[train]\n";
  for (int i = 0; i < 150000; ++i)
    many += "k" + std::to_string(i) + "=1\n";
  many.resize(std::min(many.size(), herd::config::max_config_bytes));
  const auto file = write("many.ini", many);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(errors_of(file, {}),
              HasSubstr(file + ": line 1026: more than 1024 settings (key = value)"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  // A map value's entries count too.
  std::string map = "[train]\nx = {";
  for (int i = 0; i < 2000; ++i)
    map += "a" + std::to_string(i) + " = 1, ";
  EXPECT_THAT(errors_of(write("map.ini", map + "}\n"), {}), HasSubstr("more than 1024 settings"));
}

TEST_F(front_end, a_huge_value_is_shortened_in_every_message) {
  const std::string huge(10 << 20, 'x');
  // On the command line: over the size limit.
  const auto over = errors_of("", {"--train.algorithm=" + huge});
  EXPECT_LT(over.size(), 400u) << over.substr(0, 400);
  EXPECT_THAT(over, AllOf(HasSubstr("train.algorithm = xxxx"), HasSubstr("(10485760 bytes)"),
                          HasSubstr("(command line)")));
  // Under it, the value reaches validation, whose message shortens it as well.
  const std::string large(300000, 'y');
  const auto validated = errors_of("", {"--train.algorithm=" + large});
  EXPECT_LT(validated.size(), 400u) << validated.substr(0, 400);
  EXPECT_THAT(validated, AllOf(HasSubstr("train.algorithm = \"yyyy"), HasSubstr("(300000 bytes)"),
                               HasSubstr("unknown algorithm")));
  // In a file, with its line; a huge key name, and a malformed option, shortened too.
  const auto file = write("large.ini", "[train]\nworkers = \"" + large + "\"\n");
  const auto in_file = errors_of(file, {});
  EXPECT_LT(in_file.size(), 400u + file.size());
  EXPECT_THAT(in_file, AllOf(HasSubstr("train.workers = \"yyyy"), HasSubstr("(300000 bytes)"),
                             HasSubstr("(in " + file + ", line 2)")));
  const auto start = std::chrono::steady_clock::now();
  const auto long_key = errors_of("", {"--train." + large + "=1", "--" + large});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_LT(long_key.size(), 600u) << long_key.substr(0, 600);
  EXPECT_THAT(long_key,
              AllOf(HasSubstr("unknown key train.yyyy"), HasSubstr("(300006 bytes)"),
                    HasSubstr("cannot read option '--yyyy"), HasSubstr("(300002 bytes)")));
}

TEST_F(front_end, free_form_strings_and_lists_have_bounds) {
  EXPECT_THAT(errors_of("", {"--data.path=/" + std::string(5000, 'p')}),
              AllOf(HasSubstr("data.path = \"/ppp"), HasSubstr("longer than 4096 bytes")));
  EXPECT_THAT(errors_of("", {"--metrics.job=" + std::string(300, 'j')}),
              HasSubstr("metrics.job = \"jjj"));
  std::string layers = "1";
  for (int i = 0; i < 100; ++i)
    layers += ",1";
  EXPECT_THAT(errors_of("", {"--model.hidden=" + layers}),
              HasSubstr("model.hidden = 101 layers (command line): at most 64 hidden layers"));
}

// -- data.max-bytes -------------------------------------------------------------------------------

TEST_F(front_end, data_max_bytes_defaults_to_zero_and_parses_from_file_and_command_line) {
  EXPECT_EQ(load("", {}).data.max_bytes, 0u);
  EXPECT_EQ(load("", {"--data.max-bytes=1000000"}).data.max_bytes, 1000000u);
  EXPECT_EQ(load(write("max.ini", "[data]\nmax-bytes = 123456789\n"), {}).data.max_bytes,
            123456789u);
  EXPECT_THAT(errors_of("", {"--data.max-bytes=-1"}),
              HasSubstr("data.max-bytes = -1 (command line): expected a non-negative integer"));
  EXPECT_THAT(errors_of("", {"--data.max-bytes=1.5"}), HasSubstr("data.max-bytes = 1.5"));
  EXPECT_THAT(herd::config::describe_keys(), HasSubstr("--data.max-bytes"));
  const auto set = load("", {"--data.max-bytes=4096"});
  EXPECT_EQ(from_ini(herd::config::to_ini(set), "round trip").data.max_bytes, 4096u);
}

TEST_F(front_end, abbreviate_keeps_short_text_and_shortens_long_text) {
  EXPECT_EQ(herd::config::abbreviate("short"), "short");
  EXPECT_EQ(herd::config::abbreviate(std::string(200, 'a')), std::string(200, 'a'));
  EXPECT_EQ(herd::config::abbreviate(std::string(201, 'a')),
            std::string(80, 'a') + "... (201 bytes)");
}

} // namespace
