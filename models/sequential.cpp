// The sequential model, the model.layers grammar and the presets; see sequential.hpp.
#include "herd/sequential.hpp"

#include "kernels/check.hpp"

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>

namespace herd::models {

namespace {

// More layers than this is a mistake in the text, not a model.
constexpr std::size_t max_layers = 1000;

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return {};
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

// Layer i's pass: its own seed, so two dropout layers of one step draw different masks.
pass layer_pass(const pass& p, std::size_t i) {
  return pass{p.ops, p.training, p.seed * 0x9E3779B97F4A7C15ull + i, p.sequences};
}

std::string position(std::size_t index, std::size_t count, const layer_spec& spec) {
  return "layer " + std::to_string(index + 1) + " of " + std::to_string(count) + " (" + spec.text +
         ")";
}

} // namespace

// Activations and their gradients of one replica, in the memory of the ops last used with it.
// Buffers keep their capacity between batches.
struct sequential::workspace final : model_workspace {
  const sequential* owner = nullptr;
  const kernels::memory* where = nullptr;
  std::vector<const tensor*> inputs;  // per layer: its input (x, or an earlier layer's output)
  std::vector<tensor> outputs;        // per layer (unused by layers that pass through)
  std::vector<tensor> input_grads;    // per layer: dL/d(its input)
  std::vector<layer_scratch> scratch; // per layer: what forward() leaves for backward()
  std::uint64_t steps = 0;            // loss_and_gradient() calls: the seed of dropout's masks
  tensor probs;
  tensor dlogits;
  kernels::buffer<std::int32_t> labels; // the batch's labels, when the ops are not on the host
  const std::int32_t* label_data = nullptr;
  tensor batch; // evaluate(): the batch, in the ops' memory
  std::vector<std::size_t> widths; // per layer: the elements per sample of its input this batch
  // A token model's batch as ids and lengths (kernels::ops::sequence_tokens), and the lengths on
  // the host to find the longest.
  kernels::buffer<std::int32_t> token_ids;
  kernels::buffer<std::int32_t> token_lengths;
  std::vector<std::int32_t> host_lengths;
  sequence_batch sequences;
};

sequential::sequential(std::string name, shape input, std::vector<std::unique_ptr<layer>> layers,
                       std::size_t classes)
    : name_(std::move(name)), input_(std::move(input)), layers_(std::move(layers)),
      classes_(classes) {
  HERD_CHECK(!layers_.empty() && elements(input_) > 0 && classes_ > 0,
             "a sequential model needs layers, an input shape and classes");
  const shape* in = &input_;
  tokens_ = layers_.front()->takes_tokens();
  for (const auto& each : layers_) {
    HERD_CHECK(each.get() == layers_.front().get() || !each->takes_tokens(),
               each->describe() << " reads token ids, so it must be the first layer");
    HERD_CHECK(each->input_shape() == *in, each->describe()
                                               << " takes " << shape_text(each->input_shape())
                                               << ", given " << shape_text(*in));
    offsets_.push_back(parameter_count_);
    parameter_count_ += each->parameter_count();
    in = &each->output_shape();
  }
  HERD_CHECK(*in == shape{classes_},
             "the last layer gives " << shape_text(*in) << ", not " << classes_ << " scores");
  HERD_CHECK_GT(parameter_count_, std::size_t{0});
}

std::string sequential::describe() const {
  std::string text = shape_text(input_) + ":";
  for (std::size_t i = 0; i < layers_.size(); ++i)
    text += (i ? ", " : " ") + layers_[i]->describe();
  return text;
}

tensor sequential::initial_parameters(std::uint64_t seed) const {
  tensor params({parameter_count_});
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->initialise(params.data() + offsets_[i], rng);
  return params;
}

std::unique_ptr<model_workspace> sequential::make_workspace() const {
  auto work = std::make_unique<workspace>();
  work->owner = this;
  return work;
}

void sequential::set_passes(model_workspace& any, std::uint64_t passes) const {
  auto* work = dynamic_cast<workspace*>(&any);
  HERD_CHECK(work != nullptr && work->owner == this, "a workspace of another model given to "
                                                         << name_);
  work->steps = passes;
}

sequential::workspace& sequential::prepare(const kernels::ops& ops, const tensor& x,
                                           const std::vector<std::int32_t>& labels,
                                           model_workspace& any) const {
  auto* work = dynamic_cast<workspace*>(&any);
  HERD_CHECK(work != nullptr && work->owner == this,
             "a workspace of another model given to " << name_);
  const kernels::memory& where = ops.memory();
  HERD_CHECK(&x.where() == &where, "a batch in " << x.where().name()
                                                 << " memory given to ops computing in "
                                                 << where.name() << " memory");
  HERD_CHECK_EQ(x.rows(), labels.size());
  if (work->where != &where) {
    work->where = &where;
    work->inputs.assign(layers_.size(), nullptr);
    work->outputs.assign(layers_.size(), tensor(where));
    work->input_grads.assign(layers_.size(), tensor(where));
    work->scratch.clear();
    for (std::size_t i = 0; i < layers_.size(); ++i)
      work->scratch.emplace_back(where);
    work->probs = tensor(where);
    work->dlogits = tensor(where);
    work->labels = kernels::buffer<std::int32_t>(0, where);
    work->token_ids = kernels::buffer<std::int32_t>(0, where);
    work->token_lengths = kernels::buffer<std::int32_t>(0, where);
    if (&work->batch.where() != &where)
      work->batch = tensor(where);
  }
  std::size_t width = x.cols();
  if (tokens_) {
    read_tokens(ops, x, *work);
    width = work->sequences.steps;
  } else {
    HERD_CHECK_EQ(x.cols(), elements(input_));
  }
  work->widths.resize(layers_.size());
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    work->widths[i] = width;
    width = layers_[i]->output_elements(width);
  }
  if (where.host_accessible()) {
    work->label_data = labels.data();
  } else {
    work->labels.resize(labels.size());
    ops.upload(work->labels.data(), labels.data(), labels.size() * sizeof(std::int32_t));
    work->label_data = work->labels.data();
  }
  return *work;
}

void sequential::read_tokens(const kernels::ops& ops, const tensor& x, workspace& work) const {
  const std::size_t rows = x.rows();
  const std::size_t cols = x.cols();
  HERD_CHECK(cols >= 1 && cols <= elements(input_), "a batch of " << cols << " steps given to "
                                                                  << name_
                                                                  << ", which takes at most "
                                                                  << elements(input_));
  const int height = static_cast<int>(rows);
  const int width = static_cast<int>(cols);
  work.token_ids.resize(rows * cols);
  work.token_lengths.resize(rows);
  ops.sequence_tokens(x.data(), height, width, width, work.token_ids.data(),
                      work.token_lengths.data());
  const std::int32_t* lengths = work.token_lengths.data();
  if (!ops.memory().host_accessible()) {
    work.host_lengths.resize(rows);
    ops.download(work.host_lengths.data(), lengths, rows * sizeof(std::int32_t));
    lengths = work.host_lengths.data();
  }
  const std::int32_t* shortest = std::min_element(lengths, lengths + rows);
  HERD_CHECK(*shortest >= 1, "sample " << shortest - lengths << " of the batch has no tokens");
  const int longest = *std::max_element(lengths, lengths + rows);
  // Padding columns that no sample needs are dropped: a batch costs what its longest sequence
  // does, however wide it arrives.
  if (longest < width)
    ops.sequence_tokens(x.data(), height, width, longest, work.token_ids.data(),
                        work.token_lengths.data());
  work.sequences = {work.token_ids.data(), work.token_lengths.data(),
                    static_cast<std::size_t>(longest)};
}

pass sequential::make_pass(const kernels::ops& ops, bool training, std::uint64_t seed,
                           const workspace& work) const {
  return pass{ops, training, seed, tokens_ ? &work.sequences : nullptr};
}

float sequential::forward(const pass& p, const float* params, const tensor& x,
                          workspace& work) const {
  const tensor* in = &x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const layer& each = *layers_[i];
    work.inputs[i] = in;
    if (each.passes_through())
      continue;
    // Grown, never shrunk: a layer may have grown its scratch itself (conv2d's chunks).
    const scratch_need need = each.scratch(x.rows(), work.widths[i]);
    if (need.floats > work.scratch[i].floats.size())
      work.scratch[i].floats.reshape({need.floats});
    if (need.ints > work.scratch[i].ints.size())
      work.scratch[i].ints.resize(need.ints);
    each.forward(layer_pass(p, i), params + offsets_[i], *in, work.outputs[i], work.scratch[i]);
    in = &work.outputs[i];
  }
  return softmax_cross_entropy::forward(p.ops, *in, work.label_data, work.probs);
}

float sequential::loss(const kernels::ops& ops, const float* params, const tensor& x,
                       const std::vector<std::int32_t>& labels, model_workspace& any) const {
  workspace& work = prepare(ops, x, labels, any);
  return forward(make_pass(ops, false, 0, work), params, x, work);
}

float sequential::loss_and_gradient(const kernels::ops& ops, const float* params, const tensor& x,
                                    const std::vector<std::int32_t>& labels, float* grads,
                                    model_workspace& any) const {
  struct ignored final : gradient_progress {
    void final_from(std::size_t) override {}
  } nobody;
  return loss_and_gradient_with_progress(ops, params, x, labels, grads, any, nobody);
}

float sequential::loss_and_gradient_with_progress(const kernels::ops& ops, const float* params,
                                                  const tensor& x,
                                                  const std::vector<std::int32_t>& labels,
                                                  float* grads, model_workspace& any,
                                                  gradient_progress& progress) const {
  workspace& work = prepare(ops, x, labels, any);
  const pass p = make_pass(ops, true, ++work.steps, work);
  const float batch_loss = forward(p, params, x, work);
  softmax_cross_entropy::backward(ops, work.probs, work.label_data, work.dlogits);
  const tensor* dy = &work.dlogits;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const layer& each = *layers_[i];
    if (each.passes_through())
      continue;
    // An input gradient only matters when a layer before this one has parameters: the first
    // layer's (and those of the parameterless layers before it) is never computed.
    const bool earlier_parameters = offsets_[i] > 0;
    tensor* dx = earlier_parameters ? &work.input_grads[i] : nullptr;
    each.backward(layer_pass(p, i), params + offsets_[i], *work.inputs[i], work.outputs[i], *dy,
                  grads + offsets_[i], dx, work.scratch[i]);
    if (each.parameter_count() > 0 && earlier_parameters)
      progress.final_from(offsets_[i]);
    if (dx == nullptr)
      break;
    dy = dx;
  }
  progress.final_from(0);
  return batch_loss;
}

std::vector<std::size_t> sequential::gradient_final_points() const {
  std::vector<std::size_t> points;
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (layers_[i]->parameter_count() > 0 && offsets_[i] > 0)
      points.push_back(offsets_[i]);
  return points;
}

void sequential::probabilities(const kernels::ops& ops, const float* params, const tensor& x,
                               tensor& probs, model_workspace& any) const {
  // The loss needs labels; any valid ones do, and the probabilities do not depend on them.
  const std::vector<std::int32_t> any_labels(x.rows(), 0);
  workspace& work = prepare(ops, x, any_labels, any);
  forward(make_pass(ops, false, 0, work), params, x, work);
  HERD_CHECK(&probs.where() == &ops.memory(), "probabilities asked for in "
                                                  << probs.where().name() << " memory from ops in "
                                                  << ops.memory().name() << " memory");
  probs.reshape({x.rows(), classes_});
  ops.copy(probs.data(), work.probs.data(), probs.size());
}

std::size_t sequential::evaluation_rows(std::size_t batch_size, std::size_t longest) {
  // The most token positions (rows x padded length) one evaluation batch of token texts holds.
  // textcnn's conv1d-max activations take about 500 floats per position, so this bounds its
  // evaluation batch near 270 MB.
  constexpr std::size_t evaluation_tokens = std::size_t{32} * 4096;
  return std::max<std::size_t>(
      1, std::min(batch_size, evaluation_tokens / std::max<std::size_t>(1, longest)));
}

evaluation sequential::evaluate(const kernels::ops& ops, const float* params, const dataset& data,
                                std::size_t batch_size, model_workspace& any) const {
  HERD_CHECK_GT(batch_size, 0u);
  const std::size_t inputs = elements(input_);
  HERD_CHECK_EQ(data.features(), inputs);
  evaluation result;
  std::vector<std::int32_t> labels;
  // Token texts are evaluated shortest first: a batch is padded to its longest text, so batches of
  // similar lengths cost about the sum of the texts' lengths instead of batch_size times the
  // longest of a random draw (3 to 4 times less on the fortunes). Counts and the mean loss do not
  // depend on the order (the loss up to rounding).
  std::vector<std::size_t> order;
  if (data.ragged()) {
    order.resize(data.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&data](std::size_t a, std::size_t b) {
      return data.length(a) < data.length(b);
    });
  }
  tensor padded; // token texts: the batch on the host
  double loss_sum = 0.0;
  std::size_t rows = 0;
  for (std::size_t first = 0; first < data.size(); first += rows) {
    rows = std::min(batch_size, data.size() - first);
    if (data.ragged()) {
      // At most evaluation_tokens per batch: the activations grow with rows x the longest text,
      // and a batch of 1,000 of the longest texts would take gigabytes. The texts come shortest
      // first, so the last row of a candidate batch is its longest.
      rows = evaluation_rows(rows, std::min(data.length(order[first + rows - 1]), data.max_length));
    }
    if (data.ragged()) {
      labels.resize(rows);
      for (std::size_t row = 0; row < rows; ++row)
        labels[row] = data.labels[order[first + row]];
    } else {
      labels.assign(data.labels.begin() + static_cast<std::ptrdiff_t>(first),
                    data.labels.begin() + static_cast<std::ptrdiff_t>(first + rows));
    }
    auto* work = dynamic_cast<workspace*>(&any);
    HERD_CHECK(work != nullptr, "a workspace of another model given to " << name_);
    if (&work->batch.where() != &ops.memory())
      work->batch = tensor(ops.memory());
    tensor& x = work->batch;
    if (data.ragged()) {
      // Token texts: each batch padded to its own longest text, built on the host.
      gather_rows(data, order.data() + first, rows, padded);
      x.reshape({rows, padded.cols()});
      ops.upload(x.data(), padded.data(), padded.size() * sizeof(float));
    } else {
      x.reshape({rows, inputs});
      ops.upload(x.data(), data.images.row(first), rows * inputs * sizeof(float));
    }
    prepare(ops, x, labels, any);
    loss_sum +=
        static_cast<double>(forward(make_pass(ops, false, 0, *work), params, x, *work)) * rows;
    result.correct += ops.count_correct(work->probs.data(), work->label_data,
                                        static_cast<int>(rows), static_cast<int>(classes_));
    result.samples += rows;
  }
  result.mean_loss = result.samples == 0 ? 0.0 : loss_sum / result.samples;
  return result;
}

// -- building -------------------------------------------------------------------------------------

std::vector<layer_spec> parse_layers(const std::string& text) {
  std::vector<layer_spec> specs;
  if (trim(text).empty())
    throw model_error("model.layers", "model.layers is empty; write layers such as \"flatten, "
                                      "dense 128, relu, dense 10\"");
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    layer_spec spec;
    spec.text = trim(item);
    if (spec.text.empty())
      throw model_error("model.layers", "model.layers: layer " + std::to_string(specs.size() + 1) +
                                            " is empty (two commas in a row, or one at an end)");
    std::istringstream words(spec.text);
    words >> spec.kind;
    for (std::string word; words >> word;)
      spec.arguments.push_back(word);
    specs.push_back(std::move(spec));
    if (specs.size() > max_layers)
      throw model_error("model.layers",
                        "model.layers: more than " + std::to_string(max_layers) + " layers");
  }
  if (trim(text).back() == ',')
    throw model_error("model.layers", "model.layers: layer " + std::to_string(specs.size() + 1) +
                                          " is empty (two commas in a row, or one at an end)");
  return specs;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names{"mlp", "cnn", "textcnn"};
  return names;
}

std::vector<layer_spec> preset_layers(const std::string& name, const std::vector<int>& hidden,
                                      std::size_t classes) {
  if (name == "mlp") {
    std::string text = "flatten";
    for (int size : hidden)
      text += ", dense " + std::to_string(size) + ", relu";
    return parse_layers(text + ", dense " + std::to_string(classes));
  }
  if (name == "cnn") // for 28x28 images: two 3x3 convolutions, each halved by pooling
    return parse_layers("conv 32 3x3 pad 1, relu, maxpool 2, conv 64 3x3 pad 1, relu, maxpool 2, "
                        "flatten, dense 128, relu, dense " +
                        std::to_string(classes));
  if (name == "textcnn") // for byte sequences: see docs/models.md for the sizes
    return parse_layers("embedding 256 32, conv1d-max 64 3 4 5, relu, dropout 0.5, dense " +
                        std::to_string(classes));
  std::string known;
  for (const auto& each : preset_names())
    known += (known.empty() ? "" : ", ") + each;
  throw model_error("model.preset",
                    "model.preset = \"" + name + "\": unknown preset; the presets are: " + known);
}

namespace {

// A token model's sequences are as long as its batch's longest text, not the model's length
// (`steps`): every layer from the embedding to the one that reduces the sequence (conv1d-max)
// must take any length. Widths for the full length and for one step fewer tell which does not.
void check_any_length(const std::vector<std::unique_ptr<layer>>& layers,
                      const std::vector<layer_spec>& specs, std::size_t steps,
                      const std::string& key) {
  if (layers.empty() || !layers.front()->takes_tokens() || steps < 2)
    return;
  std::size_t full = steps;
  std::size_t shorter = steps - 1;
  for (std::size_t i = 0; i < layers.size() && full != shorter; ++i) {
    const std::size_t next = layers[i]->output_elements(full);
    try {
      shorter = layers[i]->output_elements(shorter);
    } catch (const std::invalid_argument&) {
      throw model_error(key, key + ": " + position(i, specs.size(), specs[i]) + " takes " +
                                 std::to_string(full) +
                                 " values per sample, but the sequence before it is only as long "
                                 "as the batch's longest text: reduce it first, with conv1d-max");
    }
    full = next;
  }
}

} // namespace

std::unique_ptr<sequential> build_sequential(const std::string& name,
                                             const std::vector<layer_spec>& specs,
                                             const shape& input, std::size_t classes,
                                             const std::string& key) {
  std::vector<std::unique_ptr<layer>> layers;
  shape current = input;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string from =
        i == 0 ? "the data's samples" : position(i - 1, specs.size(), specs[i - 1]);
    // A name that is no layer is said first: the shape it would have taken is beside the point.
    if (const auto unknown = unknown_layer(specs[i].kind); !unknown.empty())
      throw model_error(key, key + ": " + position(i, specs.size(), specs[i]) + ": " + unknown);
    try {
      layers.push_back(make_layer(specs[i], current));
    } catch (const std::invalid_argument& unfit) {
      throw model_error(key, key + ": " + position(i, specs.size(), specs[i]) + " is given " +
                                 shape_text(current) + " by " + from + ": " + unfit.what());
    }
    if (i > 0 && layers.back()->takes_tokens())
      throw model_error(key, key + ": " + position(i, specs.size(), specs[i]) +
                                 " reads the data's token ids, so it must be the first layer");
    current = layers.back()->output_shape();
  }
  check_any_length(layers, specs, elements(input), key);
  if (current != shape{classes})
    throw model_error(key, key + ": the last layer, " +
                               position(specs.size() - 1, specs.size(), specs.back()) + ", gives " +
                               shape_text(current) + " but the loss needs " +
                               std::to_string(classes) +
                               " scores (the data's classes); end with "
                               "dense " +
                               std::to_string(classes));
  std::size_t parameters = 0;
  for (const auto& each : layers)
    parameters += each->parameter_count();
  if (parameters == 0)
    throw model_error(key, key + ": no layer has parameters; add a dense layer");
  return std::make_unique<sequential>(name, input, std::move(layers), classes);
}

std::unique_ptr<sequential> build_model(const model_choice& choice, const shape& input,
                                        std::size_t classes) {
  if (!choice.layers.empty())
    return build_sequential("sequential", parse_layers(choice.layers), input, classes,
                            "model.layers");
  auto specs = preset_layers(choice.preset, choice.hidden, classes);
  if (choice.preset == "textcnn" && input.size() != 1)
    throw model_error("model.preset",
                      "model.preset = \"textcnn\" needs token sequences (samples of L token ids, "
                      "padded at the end with -1), not the data's " +
                          shape_text(input) + " samples");
  return build_sequential(choice.preset, specs, input, classes, "model.preset");
}

} // namespace herd::models
