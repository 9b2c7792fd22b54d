// make_layer(): a layer of model.layers read from its words and built for its input shape; see
// layers.hpp and docs/models.md.
#include "herd/layers.hpp"
#include "models/image_layers.hpp"
#include "models/sequence_layers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <stdexcept>

namespace herd::models {

namespace {

// A positive size written in a layer, at most 2^24 (no layer is wider; a typo is not a request
// for terabytes).
std::size_t size_argument(const std::string& text, const std::string& what,
                          std::size_t least = 1) {
  std::size_t value = 0;
  const bool digits = !text.empty() && text.size() <= 9 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  if (digits)
    value = std::stoul(text);
  if (!digits || value < least || value > (std::size_t{1} << 24))
    throw std::invalid_argument(what + " must be a whole number between " +
                                std::to_string(least) + " and 16777216, not \"" + text + "\"");
  return value;
}

// "3" (3 x 3) or "3x5" (3 high, 5 wide).
std::pair<std::size_t, std::size_t> window_argument(const std::string& text,
                                                    const std::string& what) {
  const auto x = text.find('x');
  if (x == std::string::npos) {
    const std::size_t side = size_argument(text, what);
    return {side, side};
  }
  return {size_argument(text.substr(0, x), what + "'s height"),
          size_argument(text.substr(x + 1), what + "'s width")};
}

// The words of `spec`: `positional` values first, then `keyword value` pairs among `keywords`
// (each at most once). Throws naming the layer and its form.
struct layer_words {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
};

layer_words read_words(const layer_spec& spec, std::size_t positional,
                       const std::vector<std::string>& keywords, const std::string& form) {
  const auto& words = spec.arguments;
  auto refuse = [&](const std::string& problem) {
    throw std::invalid_argument(problem + "; write " + form);
  };
  if (words.size() < positional)
    refuse("\"" + spec.text + "\" lacks arguments");
  layer_words read;
  read.positional.assign(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(positional));
  for (std::size_t i = positional; i < words.size(); i += 2) {
    const std::string& keyword = words[i];
    bool known = false;
    for (const auto& each : keywords)
      known = known || each == keyword;
    if (!known)
      refuse("\"" + keyword + "\" is not an argument of " + spec.kind);
    if (i + 1 >= words.size())
      refuse(keyword + " needs a value");
    if (!read.options.emplace(keyword, words[i + 1]).second)
      refuse(keyword + " is given twice");
  }
  return read;
}

// Padding may be zero.
std::size_t padding_argument(const layer_words& words) {
  const auto found = words.options.find("pad");
  return found == words.options.end() ? 0 : size_argument(found->second, "pad", 0);
}

float probability_argument(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  // Checked as the float the layer keeps: 0.99999999 rounds to 1.
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value) || value < 0.0 ||
      static_cast<float>(value) >= 1.0f)
    throw std::invalid_argument("the probability of dropout must lie in [0, 1), not \"" + text +
                                "\"" + (value < 1.0 && value >= 0.0 ? " (1 as a float)" : ""));
  return static_cast<float>(value);
}

// A CxHxW input, or why the layer cannot take `input`.
void require_images(const std::string& kind, const shape& input) {
  if (input.size() != 3)
    throw std::invalid_argument(kind + " takes images (channels x height x width), not " +
                                shape_text(input));
  for (std::size_t dim : input)
    if (dim > static_cast<std::size_t>(std::numeric_limits<int>::max() / 4))
      throw std::invalid_argument(kind + ": the images " + shape_text(input) + " are too large");
}

// The window over `input` for `kind`, or why it does not fit.
kernels::window2d make_window(const std::string& kind, const shape& input,
                              std::pair<std::size_t, std::size_t> kernel,
                              std::pair<std::size_t, std::size_t> stride, std::size_t pad) {
  require_images(kind, input);
  kernels::window2d window;
  window.channels = static_cast<int>(input[0]);
  window.height = static_cast<int>(input[1]);
  window.width = static_cast<int>(input[2]);
  window.kernel_h = static_cast<int>(kernel.first);
  window.kernel_w = static_cast<int>(kernel.second);
  window.stride_h = static_cast<int>(stride.first);
  window.stride_w = static_cast<int>(stride.second);
  window.pad_h = window.pad_w = static_cast<int>(pad);
  // A pad as large as the window adds outputs whose window holds padding alone.
  if (pad > 0 && pad >= std::min(kernel.first, kernel.second))
    throw std::invalid_argument(kind + ": pad " + std::to_string(pad) + " is not below the " +
                                std::to_string(kernel.first) + "x" + std::to_string(kernel.second) +
                                " window: outputs would see only padding (pad " +
                                std::to_string(std::min(kernel.first, kernel.second) - 1) +
                                " at most; " +
                                std::to_string(std::min(kernel.first, kernel.second) / 2) +
                                " keeps the size for odd windows)");
  if (kernel.first > input[1] + 2 * pad || kernel.second > input[2] + 2 * pad)
    throw std::invalid_argument(kind + ": its " + std::to_string(kernel.first) + "x" +
                                std::to_string(kernel.second) + " window does not fit " +
                                std::to_string(input[1]) + "x" + std::to_string(input[2]) +
                                " images" + (pad > 0 ? " padded by " + std::to_string(pad) : ""));
  return window;
}

} // namespace

const std::vector<std::string>& layer_grammar() {
  static const std::vector<std::string> grammar{
      "dense N",
      "relu",
      "flatten",
      "conv FILTERS K [stride S] [pad P]",
      "maxpool K [stride S]",
      "dropout P",
      "embedding VOCAB DIM",
      "conv1d-max FILTERS W [W ...]"};
  return grammar;
}

std::unique_ptr<layer> make_layer(const layer_spec& spec, const shape& input) {
  if (spec.kind == "dense") {
    const auto words = read_words(spec, 1, {}, "dense N (N outputs, e.g. dense 128)");
    const std::size_t outputs = size_argument(words.positional[0], "the outputs of dense");
    if (input.size() != 1)
      throw std::invalid_argument("dense takes a flat input, not " + shape_text(input) +
                                  "; put flatten before it");
    return std::make_unique<dense>(input, outputs);
  }
  if (spec.kind == "relu" || spec.kind == "flatten") {
    read_words(spec, 0, {}, spec.kind + ", without arguments");
    if (spec.kind == "relu")
      return std::make_unique<relu>(input);
    return std::make_unique<flatten>(input);
  }
  if (spec.kind == "conv") {
    const std::string form = "conv FILTERS K [stride S] [pad P] (e.g. conv 32 3x3 pad 1)";
    const auto words = read_words(spec, 2, {"stride", "pad"}, form);
    const std::size_t filters = size_argument(words.positional[0], "the filters of conv");
    const auto kernel = window_argument(words.positional[1], "the window of conv");
    const auto stride = words.options.count("stride") != 0
                            ? window_argument(words.options.at("stride"), "the stride of conv")
                            : std::pair<std::size_t, std::size_t>{1, 1};
    return std::make_unique<conv2d>(
        make_window("conv", input, kernel, stride, padding_argument(words)), filters);
  }
  if (spec.kind == "maxpool") {
    const auto words = read_words(spec, 1, {"stride"}, "maxpool K [stride S] (e.g. maxpool 2)");
    const auto kernel = window_argument(words.positional[0], "the window of maxpool");
    const auto stride = words.options.count("stride") != 0
                            ? window_argument(words.options.at("stride"), "the stride of maxpool")
                            : kernel;
    return std::make_unique<maxpool2d>(make_window("maxpool", input, kernel, stride, 0));
  }
  if (spec.kind == "dropout") {
    const auto words = read_words(spec, 1, {}, "dropout P (the probability of dropping, e.g. 0.5)");
    return std::make_unique<dropout>(input, probability_argument(words.positional[0]));
  }
  if (spec.kind == "embedding") {
    const auto words =
        read_words(spec, 2, {}, "embedding VOCAB DIM (token ids below VOCAB, e.g. embedding 256 32)");
    const std::size_t vocab = size_argument(words.positional[0], "the vocabulary of embedding");
    const std::size_t dim = size_argument(words.positional[1], "the dimension of embedding");
    if (input.size() != 1)
      throw std::invalid_argument("embedding takes sequences of token ids ({L}), not " +
                                  shape_text(input));
    return std::make_unique<embedding>(input, vocab, dim);
  }
  if (spec.kind == "conv1d-max") {
    const std::string form = "conv1d-max FILTERS W [W ...] (e.g. conv1d-max 64 3 4 5)";
    if (spec.arguments.size() < 2)
      throw std::invalid_argument("\"" + spec.text + "\" lacks arguments; write " + form);
    const std::size_t filters = size_argument(spec.arguments[0], "the filters of conv1d-max");
    std::vector<std::size_t> widths;
    for (std::size_t i = 1; i < spec.arguments.size(); ++i)
      widths.push_back(size_argument(spec.arguments[i], "a width of conv1d-max"));
    if (input.size() != 2)
      throw std::invalid_argument("conv1d-max takes sequences of vectors ({L, C}, as embedding "
                                  "gives), not " +
                                  shape_text(input));
    // A window wider than the longest sequence sees only zeros beyond it, at a cost that grows
    // with its width.
    for (std::size_t width : widths)
      if (width > input[0])
        throw std::invalid_argument(
            "a width of " + std::to_string(width) + " is wider than the model's sequences of " +
            std::to_string(input[0]) + " steps (data.max-length for texts); use at most " +
            std::to_string(input[0]));
    return std::make_unique<conv1d_max>(input, filters, std::move(widths));
  }
  throw std::invalid_argument(unknown_layer(spec.kind));
}

std::string unknown_layer(const std::string& kind) {
  std::string known;
  for (const auto& form : layer_grammar()) {
    if (form.substr(0, form.find(' ')) == kind)
      return {};
    known += (known.empty() ? "" : ", ") + form;
  }
  // A last softmax is what most frameworks' models end with; here the loss applies it.
  const std::string hint =
      kind == "softmax" || kind == "log_softmax" || kind == "log-softmax"
          ? " (the loss applies softmax itself: end the model with dense CLASSES)"
          : "";
  return "unknown layer \"" + kind + "\"" + hint + "; the layers are: " + known;
}

} // namespace herd::models
