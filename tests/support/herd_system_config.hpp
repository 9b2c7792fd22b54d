// An actor system configuration with Herd's message types registered, made once per test program
// (add_message_types may be called once per config) and shared by the systems its tests make.
#pragma once

#include "actors/messages.hpp"

#include <caf/actor_system_config.hpp>

namespace herd::testing {

inline caf::actor_system_config& herd_system_config() {
  static caf::actor_system_config config;
  static const bool registered = [] {
    herd::actors::add_message_types(config);
    return true;
  }();
  static_cast<void>(registered);
  return config;
}

} // namespace herd::testing
