// The node's side of the data plane's rendezvous; see registry_store.hpp.
#include "cluster/registry_store.hpp"

#include "actors/messages.hpp"
#include "comm/errors.hpp"

#include <caf/all.hpp>

namespace herd::cluster {

using actors::store_get_atom;
using actors::store_peek_atom;
using actors::store_set_atom;

void registry_store::set(const std::string& key, const std::vector<char>& value) {
  caf::scoped_actor self{system_};
  self->send(registry_, store_set_atom::value, key, value);
}

std::vector<char> registry_store::get(const std::string& key, std::chrono::milliseconds timeout) {
  caf::scoped_actor self{system_};
  std::vector<char> value;
  std::string failure;
  self->request(registry_, timeout, store_get_atom::value, key)
      .receive([&](std::vector<char>& found) { value = std::move(found); },
               [&](caf::error& error) { failure = system_.render(error); });
  if (!failure.empty())
    throw comm::comm_error(comm::outcome::timeout,
                           "rendezvous key " + key + " not set by the other nodes (waited up to " +
                               std::to_string(timeout.count()) + " ms): " + failure);
  return value;
}

std::optional<std::vector<char>> registry_store::peek(const std::string& key) {
  caf::scoped_actor self{system_};
  std::optional<std::vector<char>> value;
  std::string failure;
  self->request(registry_, std::chrono::seconds(5), store_peek_atom::value, key)
      .receive(
          [&](bool set, std::vector<char>& found) {
            if (set)
              value = std::move(found);
          },
          [&](caf::error& error) { failure = system_.render(error); });
  if (!failure.empty())
    throw comm::comm_error(comm::outcome::failed,
                           "the coordinator did not say whether " + key + " is set: " + failure);
  return value;
}

} // namespace herd::cluster
