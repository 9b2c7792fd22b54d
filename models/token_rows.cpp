// Token sequences checked before a step reads them; see check_token_rows in herd/sequential.hpp.
#include "herd/ops.hpp"
#include "herd/sequential.hpp"

#include <cmath>
#include <sstream>
#include <string>

namespace herd::models {

namespace {

std::string id_rule(std::size_t vocabulary) {
  const std::size_t last =
      vocabulary > 0 ? vocabulary - 1 : static_cast<std::size_t>(kernels::largest_token);
  return "token ids are whole numbers from 0 to " + std::to_string(last) +
         (vocabulary > 0 ? " (the model's embedding knows " + std::to_string(vocabulary) + ")"
                         : std::string()) +
         ", and a row ends in padding, any negative value";
}

std::string place(const std::string& source, std::size_t row, std::size_t position) {
  return source + ": sample " + std::to_string(row) + ", position " + std::to_string(position) +
         ": ";
}

} // namespace

void check_token_rows(const tensor& rows, std::size_t vocabulary, const std::string& source) {
  const auto last = static_cast<float>(vocabulary > 0 ? vocabulary - 1 : kernels::largest_token);
  for (std::size_t r = 0; r < rows.rows(); ++r) {
    const float* row = rows.row(r);
    std::size_t length = 0;
    for (std::size_t t = 0; t < rows.cols(); ++t) {
      const float value = row[t];
      if (value < 0.0f)
        continue;
      if (!(value <= last) || value != std::floor(value)) {
        std::ostringstream text;
        text << value;
        const bool scaled_byte = value > 0.0f && value < 1.0f;
        throw data_error(place(source, r, t) + text.str() +
                         " is not a token id: " + id_rule(vocabulary) +
                         (scaled_byte ? " (if the file is uint8: its values were scaled to "
                                        "[0, 1] as pixels; save token ids as int32 or int64)"
                                      : ""));
      }
      if (length != t)
        throw data_error(place(source, r, t) + "a token after the padding: " + id_rule(vocabulary));
      ++length;
    }
    if (length == 0)
      throw data_error(source + ": sample " + std::to_string(r) +
                       " has no tokens (it starts with padding); each sample needs at least one");
  }
}

void check_token_rows(const dataset& data, std::size_t vocabulary, const std::string& source) {
  if (!data.ragged()) {
    if (data.size() > 0) // a set without samples may have no tensor at all
      check_token_rows(data.images, vocabulary, source);
    return;
  }
  if (vocabulary == 0)
    return; // bytes are ids below any bound
  for (std::size_t r = 0; r < data.size(); ++r)
    for (std::size_t t = 0; t < data.length(r) && t < data.max_length; ++t)
      if (const std::uint8_t byte = data.tokens[data.offsets[r] + t]; byte >= vocabulary)
        throw data_error(place(source, r, t) + "byte " + std::to_string(byte) +
                         " is beyond the model's embedding, which knows token ids 0 to " +
                         std::to_string(vocabulary - 1) +
                         "; texts are bytes, so an embedding for them needs a vocabulary of 256");
}

} // namespace herd::models
