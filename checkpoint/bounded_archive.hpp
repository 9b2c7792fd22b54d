// A cereal binary input archive that believes no count beyond the bytes left to read. cereal's
// own resizes a string, vector or deque to whatever count the bytes claim before it reads the
// elements, so 8 bytes of a damaged or crafted checkpoint could take gigabytes (a deque grows
// page by page, and never fails fast). Every element of the types Herd writes takes at least one
// byte, so a count above the bytes left is refused at once, as cereal::Exception. That bounds the
// count, not the memory: a vector of records sized to it would take each record's size for every
// byte of the file (a worker's is about 480 bytes), so vectors of records grow as their records
// are read, and a vector of numbers is sized only once its bytes are known to be there. Reads the
// format cereal::BinaryOutputArchive writes.
#pragma once

#include <algorithm>
#include <cereal/archives/binary.hpp>
#include <cereal/cereal.hpp>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <istream>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace herd::checkpoint {

class bounded_input_archive
    : public cereal::InputArchive<bounded_input_archive, cereal::AllowEmptyClassElision> {
public:
  /// Reads at most `bytes` from `stream`.
  bounded_input_archive(std::istream& stream, std::size_t bytes)
      : cereal::InputArchive<bounded_input_archive, cereal::AllowEmptyClassElision>(this),
        stream_(stream), left_(bytes) {}

  void loadBinary(void* data, std::size_t size) {
    if (size > left_)
      throw cereal::Exception("Failed to read " + std::to_string(size) + " bytes: " +
                              std::to_string(left_) + " are left");
    const auto read =
        stream_.rdbuf()->sgetn(static_cast<char*>(data), static_cast<std::streamsize>(size));
    if (read != static_cast<std::streamsize>(size))
      throw cereal::Exception("Failed to read " + std::to_string(size) +
                              " bytes from input stream! Read " + std::to_string(read));
    left_ -= size;
  }

  /// A container's count, before the container is sized to it: `count` elements of at least
  /// `element_bytes` each must be there.
  void check_count(std::uint64_t count, std::size_t element_bytes = 1) const {
    if (count > left_ / element_bytes)
      throw cereal::Exception(
          "a count of " + std::to_string(count) +
          (element_bytes > 1 ? " (of " + std::to_string(element_bytes) + " bytes each)" : "") +
          " is more than the " + std::to_string(left_) + " bytes left to read");
  }

private:
  std::istream& stream_;
  std::size_t left_;
};

template <class T>
inline std::enable_if_t<std::is_arithmetic<T>::value>
CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& archive, T& value) {
  archive.loadBinary(std::addressof(value), sizeof(value));
}

template <class T>
inline void CEREAL_SERIALIZE_FUNCTION_NAME(bounded_input_archive& archive,
                                           cereal::NameValuePair<T>& pair) {
  archive(pair.value);
}

template <class T>
inline void CEREAL_SERIALIZE_FUNCTION_NAME(bounded_input_archive& archive,
                                           cereal::SizeTag<T>& tag) {
  archive(tag.size);
  archive.check_count(static_cast<std::uint64_t>(tag.size));
}

template <class T>
inline void CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& archive, cereal::BinaryData<T>& data) {
  archive.loadBinary(data.data, static_cast<std::size_t>(data.size));
}

// Numbers: sized once the bytes of all of them are known to be left.
template <class T, class A>
inline std::enable_if_t<std::is_arithmetic<T>::value && !std::is_same<T, bool>::value>
CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& archive, std::vector<T, A>& vector) {
  cereal::size_type count = 0;
  archive(count);
  archive.check_count(static_cast<std::uint64_t>(count), sizeof(T));
  vector.resize(static_cast<std::size_t>(count));
  archive.loadBinary(vector.data(), vector.size() * sizeof(T));
}

// A deque of anything: one element at a time, as each is read (cereal's resizes to the count).
template <class T, class A>
inline void CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& archive, std::deque<T, A>& deque) {
  cereal::size_type count = 0;
  archive(cereal::make_size_tag(count));
  deque.clear();
  for (cereal::size_type i = 0; i < count; ++i) {
    deque.emplace_back();
    archive(deque.back());
  }
}

// Records: one at a time, as each is read (a few reserved ahead).
template <class T, class A>
inline std::enable_if_t<!std::is_arithmetic<T>::value>
CEREAL_LOAD_FUNCTION_NAME(bounded_input_archive& archive, std::vector<T, A>& vector) {
  cereal::size_type count = 0;
  archive(cereal::make_size_tag(count));
  vector.clear();
  vector.reserve(std::min<std::size_t>(static_cast<std::size_t>(count), 64));
  for (cereal::size_type i = 0; i < count; ++i) {
    vector.emplace_back();
    archive(vector.back());
  }
}

} // namespace herd::checkpoint

CEREAL_REGISTER_ARCHIVE(herd::checkpoint::bounded_input_archive)

// What cereal's traits pair with it: the output archive it reads (one way only; the binary
// output archive stays paired with cereal's own input archive).
namespace cereal::traits::detail {
template <>
struct get_output_from_input<herd::checkpoint::bounded_input_archive> {
  using type = cereal::BinaryOutputArchive;
};
} // namespace cereal::traits::detail
