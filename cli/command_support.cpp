// What the commands share; see command_support.hpp.
#include "cli/command_support.hpp"

#include "actors/train_session.hpp"
#include "cli/command_keys.hpp"
#include "cli/progress_printer.hpp"
#include "cli/report.hpp"
#include "cli/train_command.hpp"
#include "config/front_end.hpp"
#include "herd/data.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "cluster/cluster_session.hpp"

namespace herd::cli {

bool argument_reader::is(const std::string& name) const {
  const std::string& arg = current();
  return arg == name || arg.rfind(name + "=", 0) == 0;
}

std::string argument_reader::value(const std::string& name, const std::string& hint) {
  const std::string& arg = current();
  std::string text;
  if (arg.size() > name.size() && arg[name.size()] == '=')
    text = arg.substr(name.size() + 1);
  else if (index_ + 1 < args_.size()) {
    text = args_[index_ + 1];
    // "--out --algorithms=sync" took the option for a directory and lost it.
    if (text.rfind("--", 0) == 0 || text == "-c" || text == "-h")
      throw std::invalid_argument(name + " needs a value" + hint + ", not the option after it (" +
                                  text + "); a value that starts with - goes after =, as " + name +
                                  "=VALUE");
    ++index_;
  }
  if (text.empty())
    throw std::invalid_argument(name + " needs a value" + hint);
  const std::string option = name == "-c" ? "--config" : name; // one option, two spellings
  if (const auto before = given_.find(option); before != given_.end())
    throw std::invalid_argument(option + " is given twice (" + before->second + ", then " + text +
                                "); give it once");
  given_[option] = text;
  return text;
}

bool argument_reader::is_setting() const {
  const std::string& arg = current();
  const auto dot = arg.find('.');
  const auto equals = arg.find('=');
  return arg.rfind("--", 0) == 0 && dot != std::string::npos && equals != std::string::npos &&
         dot < equals;
}

int run_guarded(const std::string& name, const std::function<int()>& command,
                standard_output output) {
  int status = exit_run_failed;
  try {
    status = command();
  } catch (const std::exception& unexpected) {
    std::cerr << "herd " << name << ": error: " << unexpected.what() << '\n';
  }
  return output == standard_output::result ? with_output_written(name, status) : status;
}

std::string near_option(const std::string& arg, const std::vector<std::string>& options) {
  if (arg.rfind("--", 0) != 0)
    return {};
  const std::string name = arg.substr(0, arg.find('='));
  std::size_t best = 3; // near misses only
  std::string closest;
  for (const auto& option : options) {
    const auto& shorter = name.size() < option.size() ? name : option;
    const auto& longer = name.size() < option.size() ? option : name;
    const bool prefix = shorter.size() >= 5 && longer.rfind(shorter, 0) == 0; // --out, --output
    const auto distance = prefix ? 1 : config::edit_distance(name, option);
    if (distance < best) {
      best = distance;
      closest = option;
    }
  }
  return closest.empty() || closest == name ? std::string() : "; did you mean " + closest + "?";
}

std::vector<std::string> options_of_help(const std::string& help) {
  std::vector<std::string> options;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    const auto start = line.find_first_not_of(' ');
    if (start == std::string::npos || line.compare(start, 2, "--") != 0)
      continue;
    const auto end = line.find_first_of(" ,=", start);
    options.push_back(line.substr(start, end == std::string::npos ? end : end - start));
  }
  return options;
}

int with_output_written(const std::string& name, int status) {
  errno = 0;
  std::cout.flush();
  if (std::cout.good() && std::fflush(stdout) == 0 && std::ferror(stdout) == 0)
    return status;
  const int error = errno;
  std::cerr << "herd " << name << ": cannot write standard output"
            << (error != 0 ? std::string(" (") + std::strerror(error) + ")" : std::string())
            << ": what it printed is incomplete\n";
  return status == exit_ok ? exit_run_failed : status;
}

config::run_config load_for_command(const std::string& command, const std::string& file,
                                    const std::vector<std::string>& settings,
                                    const std::vector<std::string>& command_overrides,
                                    config::value_origins* origins) {
  check_settings(command, settings);
  auto all = settings;
  all.insert(all.end(), command_overrides.begin(), command_overrides.end());
  config::value_origins found;
  auto loaded = config::load(file, all, &found);
  if (auto ignored = ignored_file_keys(command, file, found); !ignored.empty())
    std::cerr << for_terminal("herd " + command + ": note: " + ignored, STDERR_FILENO) << '\n';
  // A command that trains checks against its own workers, not the job sizes a shared file's
  // [simulate] sweeps (which load() allowed for herd simulate).
  if (!keys_of(command).uses("simulate.workers"))
    if (auto errors = config::validate_run(loaded, found); !errors.empty())
      throw config::invalid_config(std::move(errors));
  if (command == "coordinator") // before any data is loaded, and under --print-config too
    if (auto refused = cluster::cluster_refusals(loaded); !refused.empty())
      throw config::invalid_config(std::move(refused));
  if (origins != nullptr)
    *origins = std::move(found);
  return loaded;
}

void print_config_errors(const std::string& name, const config::invalid_config& invalid) {
  for (const auto& error : invalid.errors())
    std::cerr << "herd " << name << ": " << error.message << '\n';
}

std::shared_ptr<const models::train_test_split>
load_data_or_report(const std::string& name, const config::run_config& config,
                    const config::value_origins* origins) {
  try {
    return load_data(config, name);
  } catch (const models::data_error& bad) {
    std::string said = bad.what();
    if (const auto key = data_key_of(config, bad.file()); !key.empty()) {
      said += " (" + key + " = \"" + bad.file() + "\"";
      if (origins != nullptr)
        if (const auto origin = origins->find(key); origin != origins->end())
          said += ", " + origin->second;
      std::error_code unknown;
      if (std::filesystem::path(bad.file()).is_relative())
        said += "; a relative path is read from the working directory, " +
                std::filesystem::current_path(unknown).string();
      said += ")";
    }
    std::cerr << "herd " << name << ": " << said << '\n';
    return nullptr;
  }
}

std::string data_key_of(const config::run_config& config, const std::string& file) {
  if (file.empty())
    return {};
  for (const auto& [key, value] : {std::pair<const char*, const std::string*>{
                                       "data.train-features", &config.data.train_features},
                                   {"data.train-labels", &config.data.train_labels},
                                   {"data.test-features", &config.data.test_features},
                                   {"data.test-labels", &config.data.test_labels},
                                   {"data.validation-features", &config.data.validation_features},
                                   {"data.validation-labels", &config.data.validation_labels}})
    if (*value == file)
      return key;
  return {};
}

std::shared_ptr<const models::train_test_split> load_data(const config::run_config& config,
                                                          const std::string& command) {
  return models::load_dataset(config, data_notes_of(command));
}

models::data_notes data_notes_of(const std::string& command) {
  return [command](const std::string& note) {
    std::cerr << for_terminal("herd " + command + ": " + note, STDERR_FILENO) << '\n';
  };
}

std::shared_ptr<const models::model> make_model_or_report(const std::string& name,
                                                          const config::run_config& config,
                                                          const models::train_test_split& data) {
  try {
    auto model = actors::make_model(config, data.train);
    const char* model_key = config.model.layers.empty() ? "model.preset" : "model.layers";
    actors::check_token_input(*model, data.test, actors::data_role::test, config, model_key);
    if (data.validation.size() > 0)
      actors::check_token_input(*model, data.validation, actors::data_role::validation, config,
                                model_key);
    return model;
  } catch (const config::invalid_config& invalid) {
    print_config_errors(name, invalid);
    return nullptr;
  }
}

std::string describe_model(const models::model& model) {
  return model.name() + " " + model.describe() + " (" + std::to_string(model.parameter_count()) +
         " parameters)";
}

void refuse_repeats(const std::string& option, const std::vector<std::string>& items) {
  for (auto item = items.begin(); item != items.end(); ++item)
    if (std::find(items.begin(), item, *item) != item)
      throw std::invalid_argument(option + ": " + *item + " is named twice");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    // "sync, solo", as a shell user may quote it: the spaces are not part of a name.
    const auto first = item.find_first_not_of(" \t");
    if (first != std::string::npos)
      items.push_back(item.substr(first, item.find_last_not_of(" \t") - first + 1));
  }
  return items;
}

namespace {

// One paragraph or entry of a help text: what comes before its words (an entry's name, padded),
// its words, and the column its continuation lines start at.
struct help_block {
  std::string lead;
  std::string words;
  std::size_t hang = 0;
};

std::size_t indentation(const std::string& line) {
  const auto first = line.find_first_not_of(' ');
  return first == std::string::npos ? line.size() : first;
}

// Spaces inside brackets ("[--report FILE]", "[256, 128]") do not break a line: they are kept
// as this character until the block is written.
constexpr char bound_space = '\x01';

void add_words(help_block& block, std::string text) {
  int depth = 0;
  for (char& c : text) {
    depth += c == '[' ? 1 : c == ']' && depth > 0 ? -1 : 0;
    if (c == ' ' && depth > 0)
      c = bound_space;
  }
  std::istringstream words(text);
  for (std::string word; words >> word;)
    block.words += (block.words.empty() ? "" : " ") + word;
}

void write_block(std::string& out, const help_block& block, std::size_t columns) {
  out += block.lead;
  std::size_t at = block.lead.size();
  bool first = true;
  if (!block.lead.empty() && block.lead.back() != ' ' && !block.words.empty()) {
    out += '\n' + std::string(block.hang, ' '); // a name alone on its line
    at = block.hang;
  }
  std::istringstream words(block.words);
  for (std::string word; words >> word; first = false) {
    if (!first && at + 1 + word.size() > columns) {
      out += '\n' + std::string(block.hang, ' ');
      at = block.hang;
    } else if (!first) {
      out += ' ';
      ++at;
    }
    std::replace(word.begin(), word.end(), bound_space, ' ');
    out += word;
    at += word.size();
  }
  out += '\n';
}

} // namespace

std::string fit_help(const std::string& text, std::size_t columns) {
  std::string out;
  help_block block;
  bool open = false; // whether `block` holds a paragraph or entry not written yet
  std::size_t block_indent = 0;
  auto flush = [&] {
    if (open)
      write_block(out, block, columns);
    open = false;
    block = help_block{};
  };
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t indent = indentation(line);
    if (indent == line.size()) { // blank
      flush();
      out += '\n';
      continue;
    }
    const bool paragraph = block_indent == 0 && block.lead.empty();
    if (open && !paragraph && indent > block_indent) { // a continuation of an entry
      if (block.hang == 0)
        block.hang = indent;
      add_words(block, line);
      continue;
    }
    if (open && paragraph && indent == 0) { // the same paragraph
      add_words(block, line);
      continue;
    }
    flush();
    open = true;
    block_indent = indent;
    if (line.rfind("usage: ", 0) == 0) { // continued under the command's first argument
      const auto command_end = line.find(' ', line.find(' ', 7) + 1);
      const std::size_t lead_end = command_end == std::string::npos ? line.size() : command_end + 1;
      block.lead = line.substr(0, lead_end);
      block.hang = lead_end;
      add_words(block, line.substr(lead_end));
      block_indent = 1; // so that its continuation lines (indented) join it
    } else if (indent == 0) {
      add_words(block, line);
    } else { // an entry: its description starts after the first two spaces in a row
      const auto gap = line.find("  ", indent);
      const auto start =
          gap == std::string::npos ? std::string::npos : line.find_first_not_of(' ', gap);
      if (start == std::string::npos) { // a name alone: its lines below say what it is
        block.lead = line.substr(0, line.find_last_not_of(' ') + 1);
      } else {
        block.lead = line.substr(0, start);
        block.hang = start;
        add_words(block, line.substr(start));
      }
    }
  }
  flush();
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + items[i];
  return out;
}

void prepare_output_directory(const std::string& dir, const std::vector<std::string>& files) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw std::invalid_argument("--out " + dir +
                                ": cannot make this directory: " + error.message());
  for (const auto& file : files) {
    try {
      check_writable((std::filesystem::path(dir) / file).string());
    } catch (const std::runtime_error& failure) {
      throw std::invalid_argument("--out " + dir + ": cannot write " + failure.what());
    }
  }
}

} // namespace herd::cli
