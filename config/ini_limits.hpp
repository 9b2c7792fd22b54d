// What an INI text can hold, for validation (which does not see the key table's CAF types).
// Internal to herd::config.
#pragma once

#include "herd/config.hpp"

#include <vector>

namespace herd::config {

/// The keys whose values in `config` an INI text cannot hold, so that neither a file nor the
/// settings a checkpoint saves could bring them back: an integer above 2^63 - 1 (CAF reads signed
/// 64-bit integers), a real that is not finite. One error per key, naming it and the value, in
/// the words the loader uses when a text holds them.
std::vector<config_error> values_beyond_ini(const run_config& config);

} // namespace herd::config
