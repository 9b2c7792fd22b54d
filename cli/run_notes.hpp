// What a run says before it starts, as notes beside its settings: what its epochs leave out,
// classes its training set lacks, settings another setting leaves unused, where comm.bucket-mb
// cuts the gradient. Each is empty (or none) when there is nothing to say.
#pragma once

#include "herd/config.hpp"
#include "herd/dataset.hpp"
#include "herd/model.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace herd::cli {

/// A note when an epoch's whole batches from equal shards leave out more than a tenth of the
/// `samples` training samples.
std::string epoch_coverage_note(const config::run_config& config, std::size_t samples);

/// A note when classes below the largest label have no training sample (labels counted from 1).
std::string missing_classes_note(const models::dataset& train);

/// Why comm.bucket-mb changes nothing for this run, if it does not.
std::string bucket_note(const config::run_config& config);

/// Settings given (`origins`: where each key was set) at other than their defaults that another
/// setting leaves unused, each named with where it was given.
std::vector<std::string> unused_settings_notes(const config::run_config& config,
                                               const config::value_origins& origins);

/// Where comm.bucket-mb cuts `model`'s gradient, where rounds begin during backward.
std::string bucket_layout_note(const config::run_config& config, const models::model& model);

} // namespace herd::cli
