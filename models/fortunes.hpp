// Language identification of short texts: the fortune cookies of Debian's fortunes packages, one
// language per package, UTF-8 bytes as tokens. Prepared once from the packages' files and cached;
// see docs/text.md.
#pragma once

#include "herd/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace herd::models {

/// A Debian package of fortunes and the language of every file it installs: the label comes from
/// the package, not from the file's place (fortunes-it links its files into the English
/// directory) nor from guessing.
struct fortune_package {
  std::string package;  // "fortunes-de"
  std::string language; // "de"
};

/// The seven packages, in label order: fortunes (en), fortunes-de, -it, -es, -pl, -cs, -ru.
const std::vector<fortune_package>& fortune_packages();

/// The texts of one fortune file: separated by lines that are exactly "%" (a trailing carriage
/// return allowed), each trimmed of surrounding white space, empty ones dropped.
std::vector<std::string> split_fortunes(const std::string& content);

/// Labelled, de-duplicated texts, in the order of the packages, their files and the files' texts.
struct fortune_corpus {
  std::vector<std::string> languages; // label -> language
  std::vector<std::string> texts;
  std::vector<std::int32_t> labels;
  std::uint64_t repeats = 0;   // copies of a text within one language, dropped (one is kept)
  std::uint64_t ambiguous = 0; // texts (counted once) found in two or more languages, dropped
};

/// Builds a corpus from texts per language (texts_per_language[label]): a text that occurs more
/// than once in a language is kept once; a text that occurs in two or more languages is dropped
/// altogether, since its bytes do not determine a label (mostly names, numbers, code and ASCII
/// art that several packages ship).
fortune_corpus deduplicate(const std::vector<std::string>& languages,
                           const std::vector<std::vector<std::string>>& texts_per_language);

/// The fortune files a package installs, from dpkg's file list `<dpkg_dir>/info/<package>.list`:
/// regular files (not symbolic links, which would count a file twice) under /usr/share/games
/// that are not strfile indices (.dat) nor the empty or linked .u8 companions, sorted by path.
/// nullopt when the list does not exist (the package is not installed).
std::optional<std::vector<std::string>> fortune_files(const std::string& package,
                                                      const std::string& dpkg_dir);

/// A data_error naming the missing packages and the line that installs them.
[[noreturn]] void throw_missing_packages(const std::vector<std::string>& missing);

/// What decides the prepared corpus: the packages' versions (from `<dpkg_dir>/status`) and every
/// file's path, size and modification time, so that an upgrade or an edited file re-prepares.
std::uint64_t fortune_fingerprint(const std::string& dpkg_dir,
                                  const std::vector<std::vector<std::string>>& files);

/// The cache file: magic, format version, the fingerprint of the inputs, the payload's size and
/// FNV-1a checksum, the payload (the corpus). Written to a temporary file of its own (threads of
/// one process may write at once) and renamed into place, so a reader never sees half a file. Host
/// byte order: a cache belongs to its machine.
void write_corpus_cache(const std::string& path, const fortune_corpus& corpus,
                        std::uint64_t fingerprint);

/// The cached corpus, or nullopt when the file is missing, not a regular file (read without
/// blocking), damaged (size, magic, version or checksum wrong) or was prepared from other inputs
/// (another fingerprint).
std::optional<fortune_corpus> read_corpus_cache(const std::string& path, std::uint64_t fingerprint);

struct fortune_options {
  std::string dpkg_dir = "/var/lib/dpkg";
  std::string cache_dir;         // "" = default_cache_dir()
  std::size_t max_length = 2048; // data.max-length: longer texts are truncated
  std::size_t max_texts = 0;     // data.max-texts: 0 = all; else a stratified share of each set
  double test_fraction = 0.1;
  std::uint64_t seed = 1; // of the split
};

/// $XDG_CACHE_HOME/herd, else $HOME/.cache/herd, else <temp>/herd-cache.
std::string default_cache_dir();

struct fortune_data {
  train_test_split split;
  fortune_corpus corpus; // without texts: the counts only
  std::string cache_path;
  bool from_cache = false;
  std::size_t truncated = 0; // texts longer than max_length, in both sets
};

/// Loads the prepared corpus from the cache, or prepares it from the packages' files and writes
/// the cache (a cache that cannot be written is not an error: the next run prepares again), then
/// splits it. Missing packages: throw_missing_packages.
fortune_data load_fortunes(const fortune_options& options);

/// Texts and labels as a ragged token dataset of `classes` classes capped at max_length tokens.
dataset make_text_dataset(const std::vector<std::string>& texts,
                          const std::vector<std::int32_t>& labels, int classes,
                          std::size_t max_length, const std::string& name);

} // namespace herd::models
