// The step relay; see step_relay.hpp.
#include "cluster/step_relay.hpp"

#include "actors/messages.hpp"

namespace herd::cluster {

namespace {

using actors::flush_atom;
using actors::step_batch;
using actors::step_ready;

class step_relay : public caf::event_based_actor {
public:
  step_relay(caf::actor_config& config, caf::actor coordinator)
      : caf::event_based_actor(config), coordinator_(std::move(coordinator)) {}

  const char* name() const override { return "herd.step_relay"; }

  void on_exit() override { coordinator_ = nullptr; }

  caf::behavior make_behavior() override {
    return {
        [this](const step_ready& ready) { keep(ready); },
        [this](flush_atom) { send_kept(); },
    };
  }

private:
  // The first report since the last batch sends this relay a flush, which comes after every
  // message already in its mailbox: the reports that came meanwhile go with it.
  void keep(const step_ready& ready) {
    kept_.reports.push_back(ready);
    if (!flush_due_) {
      flush_due_ = true;
      send(this, flush_atom::value);
    }
  }

  void send_kept() {
    flush_due_ = false;
    if (kept_.reports.empty())
      return;
    send(coordinator_, std::move(kept_));
    kept_ = step_batch{};
  }

  caf::actor coordinator_;
  step_batch kept_;
  bool flush_due_ = false;
};

} // namespace

caf::actor spawn_step_relay(caf::actor_system& system, const caf::actor& coordinator) {
  return system.spawn<step_relay>(coordinator);
}

} // namespace herd::cluster
