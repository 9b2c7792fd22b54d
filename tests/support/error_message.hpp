// The message of the exception a call is expected to throw, for tests that check what an error
// says: message_of<std::invalid_argument>([&] { ... }).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <typeinfo>

namespace herd::testing {

/// What the `Error` that `call` throws says; a test failure, and "", when it throws none (another
/// exception type propagates and fails the test).
template <class Error, class Call>
std::string message_of(Call&& call) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no exception of type " << typeid(Error).name() << " thrown";
  return {};
}

} // namespace herd::testing
