// Herd's public prediction API: class probabilities for a batch of samples from a model and any
// parameters (a run's final ones, a checkpoint's, a snapshot's), models::predict. The model
// interface it takes is models/model.hpp's.
#pragma once

#include "models/model.hpp"
#include "models/predict.hpp"
