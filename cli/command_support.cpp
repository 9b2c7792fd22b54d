// What the commands share; see command_support.hpp.
#include "cli/command_support.hpp"

#include "actors/train_session.hpp"
#include "cli/command_keys.hpp"
#include "cli/train_command.hpp"
#include "herd/data.hpp"

#include <iostream>
#include <sstream>
#include <stdexcept>

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
  else if (index_ + 1 < args_.size())
    text = args_[++index_];
  if (text.empty())
    throw std::invalid_argument(name + " needs a value" + hint);
  return text;
}

bool argument_reader::is_setting() const {
  const std::string& arg = current();
  const auto dot = arg.find('.');
  const auto equals = arg.find('=');
  return arg.rfind("--", 0) == 0 && dot != std::string::npos && equals != std::string::npos &&
         dot < equals;
}

int run_guarded(const std::string& name, const std::function<int()>& command) {
  try {
    return command();
  } catch (const std::exception& unexpected) {
    std::cerr << "herd " << name << ": error: " << unexpected.what() << '\n';
    return exit_run_failed;
  }
}

config::run_config load_for_command(const std::string& command, const std::string& file,
                                    const std::vector<std::string>& settings,
                                    const std::vector<std::string>& command_overrides) {
  check_settings(command, settings);
  auto all = settings;
  all.insert(all.end(), command_overrides.begin(), command_overrides.end());
  config::value_origins origins;
  auto loaded = config::load(file, all, &origins);
  if (auto ignored = ignored_file_keys(command, file, origins); !ignored.empty())
    std::cerr << "herd " << command << ": note: " << ignored << '\n';
  return loaded;
}

void print_config_errors(const std::string& name, const config::invalid_config& invalid) {
  for (const auto& error : invalid.errors())
    std::cerr << "herd " << name << ": " << error.message << '\n';
}

std::shared_ptr<const models::train_test_split>
load_data_or_report(const std::string& name, const config::run_config& config) {
  try {
    return load_data(config);
  } catch (const models::data_error& bad) {
    std::cerr << "herd " << name << ": " << bad.what() << '\n';
    return nullptr;
  }
}

std::shared_ptr<const models::train_test_split> load_data(const config::run_config& config) {
  return models::load_dataset(
      config, [](const std::string& note) { std::cerr << "herd: " << note << '\n'; });
}

std::shared_ptr<const models::model> make_model_or_report(const std::string& name,
                                                          const config::run_config& config,
                                                          const models::dataset& train) {
  try {
    return actors::make_model(config, train);
  } catch (const config::invalid_config& invalid) {
    print_config_errors(name, invalid);
    return nullptr;
  }
}

std::string describe_model(const models::model& model) {
  return model.name() + " " + model.describe() + " (" + std::to_string(model.parameter_count()) +
         " parameters)";
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty())
      items.push_back(item);
  return items;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + items[i];
  return out;
}

} // namespace herd::cli
