// Herd's public data API: the dataset a configuration names (load_dataset: data.dataset, data.path
// and the other [data] keys, as `herd train` loads it), and datasets of the caller's own values
// (dataset_from_memory, dataset_from_source). Every function here returns or builds a
// models::train_test_split or models::dataset that train_session and jobs take.
#pragma once

#include "models/dataset.hpp"
#include "models/dataset_sources.hpp"
#include "models/load_dataset.hpp"
