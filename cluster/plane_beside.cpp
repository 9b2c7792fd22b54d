// A node's data plane connected on a thread of its own; see plane_beside.hpp.
#include "cluster/plane_beside.hpp"

#include "actors/messages.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "cluster/node_plane.hpp"

namespace herd::cluster {

plane_wait connect_beside(std::function<std::shared_ptr<comm::data_plane>()> make,
                          caf::scoped_actor& self, const std::function<bool()>& stop_signal,
                          const std::function<void(const std::string&)>& say) {
  using clock_type = std::chrono::steady_clock;
  using plane_promise = std::promise<std::shared_ptr<comm::data_plane>>;
  auto made = std::make_shared<plane_promise>();
  auto plane = made->get_future();
  std::thread([make = std::move(make), made] {
    try {
      made->set_value(make());
    } catch (...) {
      made->set_exception(std::current_exception());
    }
  }).detach();
  const auto started = clock_type::now();
  auto next_word = started + std::chrono::seconds(15);
  plane_wait waited;
  while (plane.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
    std::optional<std::string> stopped;
    std::optional<std::string> gone;
    self->receive([&](actors::run_stopped_atom, std::string& text) { stopped = std::move(text); },
                  [&](caf::down_msg& down) { gone = self->system().render(down.reason); },
                  caf::after(std::chrono::milliseconds(100)) >> [] {});
    if (stop_signal()) {
      waited.how = plane_wait::end::stop_signal;
      return waited;
    }
    if (stopped) {
      waited.how = plane_wait::end::run_stopped;
      waited.why = std::move(*stopped);
      return waited;
    }
    if (gone) {
      waited.how = plane_wait::end::coordinator_gone;
      waited.why = std::move(*gone);
      return waited;
    }
    if (const auto now = clock_type::now(); now >= next_word) {
      next_word = now + std::chrono::minutes(1);
      say(plane_waiting_text(
          std::chrono::duration_cast<std::chrono::seconds>(now - started).count()));
    }
  }
  waited.plane = plane.get();
  return waited;
}

} // namespace herd::cluster
