// JSON documents as Herd's commands write them: indented by two, and whole even where a text in
// them is not UTF-8 (a node's name, a path): such bytes are written as U+FFFD instead of failing,
// which at the end of a run would lose the whole report.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace herd::cli {

inline std::string json_text(const nlohmann::json& document) {
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace herd::cli
