// The node's side of the data plane's rendezvous; see registry_store.hpp.
#include "cluster/registry_store.hpp"

#include "actors/messages.hpp"
#include "comm/errors.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <optional>

namespace herd::cluster {

using actors::store_get_atom;
using actors::store_peek_atom;
using actors::store_set_atom;

class registry_store::call_guard {
public:
  call_guard(registry_store& store, const std::string& key) : store_(store) {
    const std::lock_guard<std::mutex> lock(store_.mutex_);
    if (store_.closed_)
      throw comm::comm_error(comm::outcome::failed,
                             "rendezvous key " + key + ": this node stopped using the rendezvous");
    ++store_.calls_;
  }
  ~call_guard() {
    // A call's scoped actor leaves this thread holding the system's logger (CAF keeps it in a
    // thread-local), and the system's destructor waits for the logger to go: a rendezvous thread
    // left in Gloo's connect would hold the node's end forever.
    caf::logger::set_current_actor_system(nullptr);
    {
      const std::lock_guard<std::mutex> lock(store_.mutex_);
      --store_.calls_;
    }
    store_.calls_ended_.notify_all();
  }
  call_guard(const call_guard&) = delete;
  call_guard& operator=(const call_guard&) = delete;

private:
  registry_store& store_;
};

bool registry_store::closing() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

bool registry_store::close(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  closed_ = true;
  if (!calls_ended_.wait_for(lock, wait, [this] { return calls_ == 0; }))
    return false;
  registry_ = nullptr;
  return true;
}

void registry_store::set(const std::string& key, const std::vector<char>& value) {
  const call_guard counted(*this, key);
  caf::scoped_actor self{system_, true}; // hidden: no actor count waits for it
  self->send(registry_, store_set_atom::value, key, actors::wire_bytes{value});
}

std::vector<char> registry_store::get(const std::string& key, std::chrono::milliseconds timeout) {
  // A plain send, not a request, and a monitor: the answer comes as a message, and so does the
  // coordinator's loss and a stop signal, at once. A request's receive waited out its whole
  // timeout (cluster.join-timeout-s) for a coordinator that was gone.
  const call_guard counted(*this, key);
  caf::scoped_actor self{system_, true}; // hidden: no actor count waits for it
  self->monitor(registry_);
  self->send(registry_, store_get_atom::value, key);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<std::vector<char>> value;
  std::optional<comm::comm_error> failure;
  const auto unset = [&key, timeout](const std::string& why) {
    return comm::comm_error(comm::outcome::timeout,
                            "rendezvous key " + key + " not set by the other nodes (waited up to " +
                                std::to_string(timeout.count()) + " ms): " + why);
  };
  while (!value && !failure)
    self->receive([&](actors::wire_bytes& found) { value = std::move(found.data); },
                  [&](caf::error& error) {
                    const auto why = system_.render(error);
                    // The reason is the node's to lead with (refusal()), not to repeat here.
                    // Nothing timed out: the answer came, and it was no.
                    failure = comm::comm_error(comm::outcome::failed,
                                               "rendezvous key " + key +
                                                   " will not be set: the coordinator refused it");
                    const std::lock_guard<std::mutex> lock(mutex_);
                    refusal_ = why;
                  },
                  [&](caf::down_msg& down) {
                    failure =
                        comm::comm_error(comm::outcome::peer_lost,
                                         "lost the coordinator while waiting for rendezvous key " +
                                             key + ": " + system_.render(down.reason));
                  },
                  caf::after(std::chrono::milliseconds(100)) >>
                      [&] {
                        if ((stopping_ && stopping_()) || closing())
                          failure =
                              comm::comm_error(comm::outcome::failed,
                                               "stopped while waiting for rendezvous key " + key);
                        else if (std::chrono::steady_clock::now() >= deadline)
                          failure = unset("no answer in time");
                      });
  self->demonitor(registry_); // the registry's proxy would keep one monitor per read
  if (failure)
    throw *failure;
  return std::move(*value);
}

std::optional<std::string> registry_store::refusal() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return refusal_;
}

std::optional<std::vector<char>> registry_store::peek(const std::string& key) {
  const call_guard counted(*this, key);
  caf::scoped_actor self{system_, true}; // hidden: no actor count waits for it
  std::optional<std::vector<char>> value;
  std::string failure;
  self->request(registry_, std::chrono::seconds(5), store_peek_atom::value, key)
      .receive(
          [&](bool set, actors::wire_bytes& found) {
            if (set)
              value = std::move(found.data);
          },
          [&](caf::error& error) { failure = system_.render(error); });
  if (!failure.empty())
    throw comm::comm_error(comm::outcome::failed,
                           "the coordinator did not say whether " + key + " is set: " + failure);
  return value;
}

} // namespace herd::cluster
