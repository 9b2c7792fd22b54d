// The fortunes language-identification data: preparation from dpkg's file lists, de-duplication,
// the stratified split and the cache; see fortunes.hpp.
#include "models/fortunes.hpp"

#include "herd/idx.hpp" // data_error
#include "kernels/check.hpp"
#include "kernels/regular_file.hpp"
#include "models/sampler.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace herd::models {

namespace {

constexpr char cache_magic[8] = {'H', 'E', 'R', 'D', 'T', 'X', 'T', '\0'};
// Raised whenever the payload's layout or the preparation's rules change, so that older caches
// are prepared again rather than misread.
constexpr std::uint32_t cache_version = 1;
constexpr std::size_t cache_header_bytes = sizeof(cache_magic) + 4 + 8 + 8 + 8;

// FNV-1a, 64 bits: a checksum against damage and a fingerprint of the inputs, not a defence
// against anyone forging a cache (which could as well edit the packages' files).
struct fnv1a {
  std::uint64_t value = 0xcbf29ce484222325ull;
  void add(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i)
      value = (value ^ p[i]) * 0x100000001b3ull;
  }
  void add(const std::string& text) {
    add_number(text.size());
    add(text.data(), text.size());
  }
  void add_number(std::uint64_t number) { add(&number, sizeof number); }
};

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n\f\v") - first + 1);
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Version of an installed package from dpkg's status file ("" when not found).
std::string package_version(const std::string& dpkg_dir, const std::string& package) {
  std::ifstream status(dpkg_dir + "/status");
  bool in_package = false;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Package: ", 0) == 0)
      in_package = line.substr(9) == package;
    else if (in_package && line.rfind("Version: ", 0) == 0)
      return line.substr(9);
  }
  return {};
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw data_error(path + ": cannot be read");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

void put_u32(std::string& out, std::uint32_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
void put_u64(std::string& out, std::uint64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Reads the payload front to back; any read past its end marks it bad.
struct payload_reader {
  const std::string& bytes;
  std::size_t at = 0;
  bool bad = false;
  template <typename T>
  T number() {
    T value{};
    if (at + sizeof value > bytes.size()) {
      bad = true;
      return value;
    }
    std::memcpy(&value, bytes.data() + at, sizeof value);
    at += sizeof value;
    return value;
  }
  std::string text(std::size_t length) {
    if (length > bytes.size() - at) {
      bad = true;
      return {};
    }
    at += length;
    return bytes.substr(at - length, length);
  }
};

} // namespace

const std::vector<fortune_package>& fortune_packages() {
  static const std::vector<fortune_package> packages{
      {"fortunes", "en"},    {"fortunes-de", "de"}, {"fortunes-it", "it"}, {"fortunes-es", "es"},
      {"fortunes-pl", "pl"}, {"fortunes-cs", "cs"}, {"fortunes-ru", "ru"}};
  return packages;
}

std::vector<std::string> split_fortunes(const std::string& content) {
  std::vector<std::string> texts;
  std::string current;
  auto finish = [&] {
    if (auto text = trim(current); !text.empty())
      texts.push_back(std::move(text));
    current.clear();
  };
  std::size_t start = 0;
  while (start < content.size()) {
    auto end = content.find('\n', start);
    if (end == std::string::npos)
      end = content.size();
    const std::string_view line(content.data() + start, end - start);
    if (line == "%" || line == "%\r")
      finish();
    else
      current.append(content, start, std::min(end + 1, content.size()) - start);
    start = end + 1;
  }
  finish();
  return texts;
}

fortune_corpus deduplicate(const std::vector<std::string>& languages,
                           const std::vector<std::vector<std::string>>& texts_per_language) {
  HERD_CHECK_EQ(languages.size(), texts_per_language.size());
  constexpr std::int32_t several = -1;
  std::unordered_map<std::string_view, std::int32_t> label_of;
  for (std::size_t label = 0; label < texts_per_language.size(); ++label)
    for (const auto& text : texts_per_language[label]) {
      auto [where, added] = label_of.emplace(text, static_cast<std::int32_t>(label));
      if (!added && where->second != static_cast<std::int32_t>(label))
        where->second = several;
    }
  fortune_corpus corpus;
  corpus.languages = languages;
  std::unordered_map<std::string_view, bool> emitted;
  for (std::size_t label = 0; label < texts_per_language.size(); ++label)
    for (const auto& text : texts_per_language[label]) {
      const bool first = emitted.emplace(text, true).second;
      if (label_of.at(text) == several) {
        corpus.ambiguous += first ? 1 : 0;
      } else if (!first) {
        ++corpus.repeats;
      } else {
        corpus.texts.push_back(text);
        corpus.labels.push_back(static_cast<std::int32_t>(label));
      }
    }
  return corpus;
}

std::optional<std::vector<std::string>> fortune_files(const std::string& package,
                                                      const std::string& dpkg_dir) {
  std::ifstream list(dpkg_dir + "/info/" + package + ".list");
  if (!list)
    return std::nullopt;
  std::vector<std::string> files;
  for (std::string path; std::getline(list, path);) {
    if (path.rfind("/usr/share/games/", 0) != 0 || ends_with(path, ".dat") ||
        ends_with(path, ".u8"))
      continue;
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
      continue;
    files.push_back(path);
  }
  std::sort(files.begin(), files.end());
  return files;
}

void throw_missing_packages(const std::vector<std::string>& missing) {
  std::string names;
  for (const auto& each : missing)
    names += (names.empty() ? "" : " ") + each;
  throw data_error("data.dataset = \"fortunes\" needs the Debian package" +
                   std::string(missing.size() == 1 ? "" : "s") + " " + names +
                   ", not installed: apt-get install " + names +
                   " (scripts/install-deps.sh installs them)");
}

std::uint64_t fortune_fingerprint(const std::string& dpkg_dir,
                                  const std::vector<std::vector<std::string>>& files) {
  fnv1a hash;
  hash.add_number(cache_version);
  const auto& packages = fortune_packages();
  for (std::size_t p = 0; p < files.size() && p < packages.size(); ++p) {
    hash.add(packages[p].package);
    hash.add(package_version(dpkg_dir, packages[p].package));
    for (const auto& path : files[p]) {
      struct stat info {};
      ::stat(path.c_str(), &info);
      hash.add(path);
      hash.add_number(static_cast<std::uint64_t>(info.st_size));
      hash.add_number(static_cast<std::uint64_t>(info.st_mtim.tv_sec));
      hash.add_number(static_cast<std::uint64_t>(info.st_mtim.tv_nsec));
    }
  }
  return hash.value;
}

void write_corpus_cache(const std::string& path, const fortune_corpus& corpus,
                        std::uint64_t fingerprint) {
  std::string payload;
  put_u32(payload, static_cast<std::uint32_t>(corpus.languages.size()));
  for (const auto& language : corpus.languages) {
    put_u32(payload, static_cast<std::uint32_t>(language.size()));
    payload += language;
  }
  put_u64(payload, corpus.repeats);
  put_u64(payload, corpus.ambiguous);
  put_u64(payload, corpus.texts.size());
  for (std::size_t i = 0; i < corpus.texts.size(); ++i) {
    put_u32(payload, static_cast<std::uint32_t>(corpus.labels[i]));
    put_u32(payload, static_cast<std::uint32_t>(corpus.texts[i].size()));
    payload += corpus.texts[i];
  }
  fnv1a checksum;
  checksum.add(payload.data(), payload.size());
  std::string header(cache_magic, sizeof cache_magic);
  put_u32(header, cache_version);
  put_u64(header, fingerprint);
  put_u64(header, payload.size());
  put_u64(header, checksum.value);

  const auto target = std::filesystem::path(path);
  std::filesystem::create_directories(target.parent_path());
  // Of this process and this call: two jobs of one service may prepare the corpus at once.
  static std::atomic<std::uint64_t> writes{0};
  const auto temporary =
      target.string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes++);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << header << payload;
    out.flush();
    if (!out)
      throw data_error(temporary + ": cannot be written");
  }
  std::filesystem::rename(temporary, target);
}

std::optional<fortune_corpus> read_corpus_cache(const std::string& path,
                                                std::uint64_t fingerprint) {
  // Without blocking, and only a regular file: a FIFO there would wait for a writer forever
  // (the corpus is then prepared again and its cache renamed over it).
  std::string bytes;
  try {
    bytes = kernels::read_regular_file(path, std::numeric_limits<std::uint64_t>::max());
  } catch (const std::exception&) { // unreadable, or too large for memory: prepared again
    return std::nullopt;
  }
  if (bytes.size() < cache_header_bytes ||
      std::memcmp(bytes.data(), cache_magic, sizeof cache_magic) != 0)
    return std::nullopt;
  payload_reader header{bytes, sizeof cache_magic};
  const auto version = header.number<std::uint32_t>();
  const auto stored_fingerprint = header.number<std::uint64_t>();
  const auto payload_bytes = header.number<std::uint64_t>();
  const auto stored_checksum = header.number<std::uint64_t>();
  if (version != cache_version || stored_fingerprint != fingerprint ||
      payload_bytes != bytes.size() - cache_header_bytes)
    return std::nullopt;
  const std::string payload = bytes.substr(cache_header_bytes);
  fnv1a checksum;
  checksum.add(payload.data(), payload.size());
  if (checksum.value != stored_checksum)
    return std::nullopt;

  payload_reader read{payload};
  fortune_corpus corpus;
  const auto languages = read.number<std::uint32_t>();
  for (std::uint32_t i = 0; i < languages && !read.bad; ++i)
    corpus.languages.push_back(read.text(read.number<std::uint32_t>()));
  corpus.repeats = read.number<std::uint64_t>();
  corpus.ambiguous = read.number<std::uint64_t>();
  const auto texts = read.number<std::uint64_t>();
  for (std::uint64_t i = 0; i < texts && !read.bad; ++i) {
    const auto label = read.number<std::uint32_t>();
    corpus.labels.push_back(static_cast<std::int32_t>(label));
    corpus.texts.push_back(read.text(read.number<std::uint32_t>()));
    read.bad = read.bad || label >= languages;
  }
  if (read.bad || read.at != payload.size())
    return std::nullopt;
  return corpus;
}

std::string default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/herd";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return std::string(home) + "/.cache/herd";
  return (std::filesystem::temp_directory_path() / "herd-cache").string();
}

dataset make_text_dataset(const std::vector<std::string>& texts,
                          const std::vector<std::int32_t>& labels, int classes,
                          std::size_t max_length, const std::string& name) {
  HERD_CHECK_EQ(texts.size(), labels.size());
  dataset data;
  data.classes = classes;
  data.name = name;
  data.max_length = max_length;
  data.labels = labels;
  data.offsets.reserve(texts.size() + 1);
  data.offsets.push_back(0);
  for (const auto& text : texts) {
    // Tokens past the cap would never reach a batch: not kept.
    const std::size_t kept = std::min(text.size(), max_length);
    data.tokens.insert(data.tokens.end(), text.begin(),
                       text.begin() + static_cast<std::ptrdiff_t>(kept));
    data.offsets.push_back(data.tokens.size());
  }
  return data;
}

fortune_data load_fortunes(const fortune_options& options) {
  HERD_CHECK_GT(options.max_length, std::size_t{0});
  const auto& packages = fortune_packages();
  std::vector<std::vector<std::string>> files;
  std::vector<std::string> missing;
  for (const auto& each : packages) {
    auto found = fortune_files(each.package, options.dpkg_dir);
    if (!found)
      missing.push_back(each.package);
    files.push_back(found.value_or(std::vector<std::string>{}));
  }
  if (!missing.empty())
    throw_missing_packages(missing);

  fortune_data result;
  const std::string dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  result.cache_path = dir + "/fortunes.cache";
  const std::uint64_t fingerprint = fortune_fingerprint(options.dpkg_dir, files);
  auto corpus = read_corpus_cache(result.cache_path, fingerprint);
  result.from_cache = corpus.has_value();
  if (!corpus) {
    std::vector<std::string> languages;
    std::vector<std::vector<std::string>> texts(packages.size());
    for (std::size_t p = 0; p < packages.size(); ++p) {
      languages.push_back(packages[p].language);
      for (const auto& path : files[p])
        for (auto& text : split_fortunes(read_whole(path)))
          texts[p].push_back(std::move(text));
    }
    corpus = deduplicate(languages, texts);
    try {
      write_corpus_cache(result.cache_path, *corpus, fingerprint);
    } catch (const std::exception&) {
      result.cache_path.clear(); // not cached: said by the caller
    }
  }

  const int classes = static_cast<int>(corpus->languages.size());
  std::vector<bool> keep(corpus->texts.size(), true);
  if (options.max_texts > 0 && options.max_texts < corpus->texts.size())
    keep = stratified_subset(corpus->labels, classes, options.max_texts, options.seed + 1);
  const auto test =
      stratified_test_choice(corpus->labels, classes, options.test_fraction, options.seed);
  std::vector<std::string> train_texts, test_texts;
  std::vector<std::int32_t> train_labels, test_labels;
  for (std::size_t i = 0; i < corpus->texts.size(); ++i) {
    if (!keep[i])
      continue;
    result.truncated += corpus->texts[i].size() > options.max_length ? 1 : 0;
    (test[i] ? test_texts : train_texts).push_back(std::move(corpus->texts[i]));
    (test[i] ? test_labels : train_labels).push_back(corpus->labels[i]);
  }
  corpus->texts.clear();
  result.split.train =
      make_text_dataset(train_texts, train_labels, classes, options.max_length, "fortunes/train");
  result.split.test =
      make_text_dataset(test_texts, test_labels, classes, options.max_length, "fortunes/test");
  result.corpus = std::move(*corpus);
  return result;
}

} // namespace herd::models
