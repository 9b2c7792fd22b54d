// Seeded mutations of configuration texts for the fuzz tests: the shipped configurations as the
// corpus, the grammar's tokens and the bytes the loader's front end guards against as the pieces.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/read_file.hpp"

namespace herd::testing {

// The shipped configurations, and a few texts that use the rest of CAF's INI syntax.
inline std::vector<std::string> seed_corpus() {
  std::vector<std::string> corpus;
  for (const auto& entry : std::filesystem::directory_iterator(HERD_CONFIG_DIR))
    if (entry.path().extension() == ".ini")
      corpus.push_back(read_file(entry.path()));
  corpus.push_back("[train]\nalgorithm = 'solo'\nworkers = 8\nlr = 1e-2\n[model]\nhidden = [64, "
                   "32]\n[imbalance]\nworkers = [0, 1]\nkind = \"persistent\"\n");
  corpus.push_back("[cluster]\ntoken = \"a\\\"b\\\\c\"\n[metrics]\nbind = \"0.0.0.0\"\n"
                   "port = 9100\n[data]\npath = \"/tmp/x\" ; comment [[[\n");
  corpus.push_back("[train.sub]\nx = {a = 1, b = [1, 2, {c = 3}]}\ny = <tcp://host:1>\n"
                   "[global]\nz = true\n");
  return corpus;
}

// What a mutation inserts: the tokens of the grammar, the bytes the front end guards against, and
// values of every size.
inline const std::vector<std::string>& tokens() {
  static const std::vector<std::string> pieces = [] {
    std::vector<std::string> t{"[",
                               "]",
                               "{",
                               "}",
                               "=",
                               ";",
                               "\"",
                               "'",
                               "<",
                               ">",
                               ".",
                               ",",
                               "\\",
                               "\n",
                               "\r",
                               "\r\n",
                               std::string(1, '\0'),
                               "\t",
                               " ",
                               "\xEF\xBB\xBF",
                               "[train]",
                               "[data]",
                               "[model]",
                               "[train.x]",
                               "workers",
                               "lr",
                               "-",
                               "_",
                               "1e308",
                               "-1",
                               "0",
                               "9223372036854775808",
                               "nan",
                               "true",
                               "'atom'",
                               "\"text\"",
                               "[1, 2]",
                               "\xff\xfe",
                               "workers = 2\n",
                               "hidden = [8]\n"};
    t.push_back(std::string(31, '[') + std::string(31, ']'));
    t.push_back(std::string(40, '['));
    t.push_back(std::string(40, '{'));
    t.push_back("[" + std::string(40, '.') + "]");
    t.push_back("\"" + std::string(5000, 'v') + "\"");
    t.push_back(std::string(300, 'k') + " = 1\n");
    return t;
  }();
  return pieces;
}

class mutator {
public:
  explicit mutator(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t bound) {
    return bound == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, bound - 1)(rng_);
  }

  // One to four edits: flip, insert, delete, duplicate, splice, truncate.
  std::string mutate(std::string text, const std::vector<std::string>& corpus) {
    const std::size_t edits = 1 + below(4);
    for (std::size_t edit = 0; edit < edits; ++edit) {
      const std::size_t at = below(text.size() + 1);
      switch (below(7)) {
      case 0: // flip a byte
        if (!text.empty())
          text[below(text.size())] ^= static_cast<char>(1 + below(255));
        break;
      case 1: // insert a token
      case 2:
        text.insert(at, tokens()[below(tokens().size())]);
        break;
      case 3: // delete a stretch
        text.erase(at, below(64));
        break;
      case 4: // duplicate a stretch (repeated keys and sections)
        if (!text.empty()) {
          const std::size_t from = below(text.size());
          const std::string piece = text.substr(from, 1 + below(200));
          text.insert(at, piece);
        }
        break;
      case 5: { // splice in part of another text
        const std::string& other = corpus[below(corpus.size())];
        const std::size_t from = below(other.size());
        text.insert(at, other.substr(from, below(400)));
        break;
      }
      default: // truncate
        text.resize(at);
        break;
      }
    }
    return text;
  }

  // Random bytes: a third from the grammar's alphabet, so that they get past the first character
  // now and then, a third any byte but NUL, a third any byte (most of those are refused for a NUL).
  std::string random_text(std::size_t longest) {
    static const std::string alphabet = "[]{}=;\"'<>.,\\\n\r\t abcxyz019-_";
    const std::size_t kind = below(3);
    std::string text(below(longest + 1), '\0');
    for (char& c : text)
      c = kind == 0   ? alphabet[below(alphabet.size())]
          : kind == 1 ? static_cast<char>(1 + below(255))
                      : static_cast<char>(below(256));
    return text;
  }

private:
  std::mt19937_64 rng_;
};

} // namespace herd::testing
