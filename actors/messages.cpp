// Registration of Herd's message types and error category; see messages.hpp and errors.hpp.
#include "actors/messages.hpp"

#include "actors/errors.hpp"

#include <caf/exit_reason.hpp>

namespace herd::actors {

namespace {

constexpr caf::atom_value error_category = caf::atom("herd");

} // namespace

const char* to_string(herd_errc code) {
  switch (code) {
  case herd_errc::compute_failed:
    return "compute_failed";
  case herd_errc::evaluation_failed:
    return "evaluation_failed";
  case herd_errc::join_refused:
    return "join_refused";
  case herd_errc::checkpoint_failed:
    return "checkpoint_failed";
  case herd_errc::run_stopped:
    return "run_stopped";
  }
  return "unknown";
}

caf::error make_error(herd_errc code, std::string context) {
  return caf::error{static_cast<std::uint8_t>(code), error_category,
                    caf::make_message(std::move(context))};
}

std::optional<std::string> context_of(const caf::error& error, herd_errc code) {
  if (error.category() != error_category || error.code() != static_cast<std::uint8_t>(code))
    return std::nullopt;
  return error.context().match_elements<std::string>() ? error.context().get_as<std::string>(0)
                                                       : std::string();
}

comm::status status_of(const caf::error& failure, std::string message) {
  const bool timed_out = failure == caf::sec::request_timeout;
  return {timed_out ? comm::outcome::timeout : comm::outcome::peer_lost, std::move(message)};
}

namespace {

// Why an actor ended, for the notices that say a worker, a node or the coordinator was lost:
// CAF's own rendering ("exit_reason(remote_link_unreachable)") names an enum, not what happened.
std::string describe_exit(std::uint8_t code, caf::atom_value, const caf::message&) {
  switch (static_cast<caf::exit_reason>(code)) {
  case caf::exit_reason::normal:
    return "it ended";
  case caf::exit_reason::user_shutdown:
    return "it was shut down";
  case caf::exit_reason::kill:
    return "it was killed";
  case caf::exit_reason::remote_link_unreachable:
    return "its process cannot be reached any more (it exited or crashed, its machine or the "
           "network went away, or it was silent past cluster.node-timeout-ms)";
  case caf::exit_reason::unreachable:
    return "it cannot be reached";
  case caf::exit_reason::unhandled_exception:
    return "it threw an exception it did not handle";
  case caf::exit_reason::unknown:
    return "it no longer exists";
  case caf::exit_reason::out_of_workers:
    return "no thread was left to run it";
  default:
    return "exit_reason(" + caf::to_string(static_cast<caf::exit_reason>(code)) + ")";
  }
}

// CAF's own failures of a request, for the notices that say an evaluation, a snapshot or a round
// failed: "system_error(request_receiver_down)" names an enum. The rest render as CAF renders them.
std::string describe_sec(std::uint8_t code, caf::atom_value category, const caf::message& context) {
  switch (static_cast<caf::sec>(code)) {
  case caf::sec::request_receiver_down:
    return "the actor asked had already ended (finished, failed or stopped)";
  case caf::sec::request_timeout:
    return "no answer in time";
  case caf::sec::unexpected_message:
    return "the actor asked does not handle that message";
  case caf::sec::no_route_to_receiving_node:
    return "the process of the actor asked cannot be reached";
  default:
    return caf::actor_system_config::render_sec(code, category, context);
  }
}

} // namespace

void add_error_category(caf::actor_system_config& config) {
  config.add_error_category(caf::atom("exit"), describe_exit);
  config.add_error_category(caf::atom("system"), describe_sec);
  config.add_error_category(error_category,
                            [](std::uint8_t code, caf::atom_value, const caf::message& context) {
                              // The context is a whole sentence; the code is for code.
                              if (context.match_elements<std::string>())
                                return context.get_as<std::string>(0);
                              return std::string(to_string(static_cast<herd_errc>(code)));
                            });
}

caf::error load_wire_bytes(caf::deserializer& source, std::vector<char>& data) {
  std::size_t count = 0;
  if (auto failed = source.begin_sequence(count))
    return failed;
  data.clear();
  if (const auto* binary = dynamic_cast<const caf::binary_deserializer*>(&source)) {
    if (count > binary->remaining())
      return caf::make_error(caf::sec::end_of_stream);
    data.resize(count);
    if (auto failed = count > 0 ? source.apply_raw(count, data.data()) : caf::error{})
      return failed;
  } else {
    constexpr std::size_t chunk = std::size_t{1} << 20;
    while (data.size() < count) {
      const auto at = data.size();
      data.resize(at + std::min(chunk, count - at));
      if (auto failed = source.apply_raw(data.size() - at, data.data() + at))
        return failed;
    }
  }
  return source.end_sequence();
}

void add_message_types(caf::actor_system_config& config) {
  config.add_message_type<wire_bytes>("herd.bytes");
  config.add_message_type<step_ready>("herd.step_ready");
  config.add_message_type<step_batch>("herd.step_batch");
  config.add_message_type<contribution_asks>("herd.contribution_asks");
  config.add_message_type<contribution_answers>("herd.contribution_answers");
  config.add_message_type<group_plan>("herd.group_plan");
  config.add_message_type<contribution>("herd.contribution");
  config.add_message_type<group_done>("herd.group_done");
  config.add_message_type<run_start>("herd.run_start");
  config.add_message_type<worker_stopped>("herd.worker_stopped");
  config.add_message_type<evaluation_result>("herd.evaluation_result");
  config.add_message_type<parameter_snapshot>("herd.parameter_snapshot");
  config.add_message_type<node_hello>("herd.node_hello");
  config.add_message_type<node_welcome>("herd.node_welcome");
  config.add_message_type<part_record>("herd.part_record");
  config.add_message_type<part_request>("herd.part_request");
  config.add_message_type<node_ready>("herd.node_ready");
  config.add_message_type<reduce_order>("herd.reduce_order");
  config.add_message_type<reduce_done>("herd.reduce_done");
  config.add_message_type<cluster_topology>("herd.cluster_topology");
  config.add_message_type<node_admission>("herd.node_admission");
  config.add_message_type<node_departure>("herd.node_departure");
  config.add_message_type<state_transfer>("herd.state_transfer");
  config.add_message_type<plane_rebuild>("herd.plane_rebuild");
  config.add_message_type<plane_refusal>("herd.plane_refusal");
  config.add_message_type<plane_rekey>("herd.plane_rekey");
  add_error_category(config);
}

} // namespace herd::actors
