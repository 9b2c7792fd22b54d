// Dropping what no handler takes; see unexpected_messages.hpp.
#include "actors/unexpected_messages.hpp"

#include <caf/message_view.hpp>
#include <caf/sec.hpp>
#include <caf/type_erased_tuple.hpp>

#include <memory>
#include <optional>

namespace herd::actors {

caf::scheduled_actor::default_handler
drop_unexpected(std::string actor, std::function<void(const std::string&)> notice,
                std::chrono::steady_clock::duration interval) {
  struct tally {
    std::optional<std::chrono::steady_clock::time_point> said; // the last line
    std::uint64_t dropped = 0;                                 // since then
  };
  return [actor = std::move(actor), notice = std::move(notice), interval,
          seen = std::make_shared<tally>()](caf::scheduled_actor*,
                                            caf::message_view& message) -> caf::result<caf::message> {
    ++seen->dropped;
    const auto now = std::chrono::steady_clock::now();
    if (notice && (!seen->said || now - *seen->said >= interval)) {
      const auto values = message.content().size();
      notice(actor + " dropped " +
             (seen->dropped == 1 ? std::string("a message")
                                 : std::to_string(seen->dropped) + " messages") +
             " that none of its handlers takes (the latest holds " + std::to_string(values) +
             (values == 1 ? " value" : " values") + "; a peer of another Herd version, or not Herd)");
      seen->said = now;
      seen->dropped = 0;
    }
    return caf::sec::unexpected_message;
  };
}

} // namespace herd::actors
