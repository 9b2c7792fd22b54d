// Connecting a node's data plane on a thread of its own: Gloo's rendezvous and connects, which
// nothing interrupts and which a firewall between the nodes holds for minutes, run there, while
// the node waits where a stop signal, the coordinator's stop or its loss ends the wait at once.
#pragma once

#include "comm/data_plane.hpp"

#include <caf/fwd.hpp>

#include <functional>
#include <memory>
#include <string>

namespace herd::cluster {

/// How a wait for a data plane ended.
struct plane_wait {
  enum class end { connected, stop_signal, run_stopped, coordinator_gone };
  end how = end::connected;
  std::shared_ptr<comm::data_plane> plane; // connected
  std::string why; // run_stopped: the coordinator's account; coordinator_gone: the reason
};

/// Runs `make` on a thread of its own and waits for it on `self`, which hears the coordinator's
/// run_stopped_atom and the down message of the coordinator it monitors; `stop_signal` is asked
/// every 100 ms. After 15 s, and every minute, `say` hears plane_waiting_text(). A wait that ends
/// otherwise than connected leaves the thread to end by itself: `make` must hold what it uses.
/// Throws what `make` threw.
plane_wait connect_beside(std::function<std::shared_ptr<comm::data_plane>()> make,
                          caf::scoped_actor& self, const std::function<bool()>& stop_signal,
                          const std::function<void(const std::string&)>& say);

} // namespace herd::cluster
