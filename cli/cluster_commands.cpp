// `herd coordinator` and `herd node`; see cluster_commands.hpp.
#include "cli/cluster_commands.hpp"

#include "actors/checkpoint_state.hpp"
#include "actors/train_session.hpp"
#include "cli/cluster_security.hpp"
#include "cli/command_keys.hpp"
#include "cli/command_support.hpp"
#include "cli/progress_printer.hpp"
#include "cli/run_support.hpp"
#include "cli/stop_signals.hpp"
#include "cli/train_command.hpp"
#include "herd/config.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "checkpoint/format.hpp"
#include "cluster/admission.hpp"
#include "cluster/cluster_node.hpp"
#include "cluster/cluster_session.hpp"
#include "cluster/gate_link.hpp"

namespace herd::cli {

namespace {

constexpr const char* default_listen = "0.0.0.0:7070";
constexpr int max_workers = 1024; // train.workers' limit

// The cluster.* settings that belong on a node's command line: those both ends must agree on,
// and the node's own join timeout. The others come from the coordinator.
struct endpoint_address {
  std::string host;
  std::uint16_t port = 0;
};

// "HOST:PORT" (the last colon splits, so "[::1]:7070" and "::1:7070" keep their host); throws
// std::invalid_argument naming the option and the value.
endpoint_address parse_endpoint(const std::string& option, const std::string& text,
                                bool port_may_be_zero) {
  const auto colon = text.rfind(':');
  const std::string hint = option + " " + text + ": expected HOST:PORT, e.g. 10.0.0.5:7070";
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument(hint);
  endpoint_address address;
  address.host = text.substr(0, colon);
  if (address.host.size() > 2 && address.host.front() == '[' && address.host.back() == ']')
    address.host = address.host.substr(1, address.host.size() - 2);
  const std::string port = text.substr(colon + 1);
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5)
    throw std::invalid_argument(hint);
  const unsigned long value = std::stoul(port);
  if (value > 65535 || (value == 0 && !port_may_be_zero))
    throw std::invalid_argument(option + " " + text + ": the port must be between " +
                                (port_may_be_zero ? "0" : "1") + " and 65535");
  address.port = static_cast<std::uint16_t>(value);
  return address;
}

int positive_count(const std::string& option, const std::string& text) {
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1 || value > max_workers)
    throw std::invalid_argument(option + " " + text + ": expected a number of workers from 1 to " +
                                std::to_string(max_workers));
  return value;
}

int run_coordinator(const std::vector<std::string>& args) {
  run_arguments parsed;
  endpoint_address listen;
  try {
    parsed = parse_run_arguments(args, "coordinator", {"--listen", "--resume"});
    if (!parsed.help)
      listen = parse_endpoint(
          "--listen",
          parsed.options.count("--listen") > 0 ? parsed.options["--listen"] : default_listen, true);
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd coordinator: " << bad.what() << '\n';
    return exit_bad_input;
  }
  if (parsed.help) {
    std::cout << fit_help(coordinator_help());
    return exit_ok;
  }
  // The workers are the nodes' (train.workers is replaced once they joined), so checks against
  // the worker count wait until then: meanwhile they are made against the most there may be.
  if (!parsed.print_config) // which shows the settings as given, with a word on the workers
    parsed.command_overrides.push_back("--train.workers=" + std::to_string(max_workers));
  // The listen address against the token, before the dataset loads (and under --print-config).
  const bool listen_given = parsed.options.count("--listen") > 0;
  auto preparation = prepare_run("coordinator", parsed, [&](config::run_config& settings) {
    if (auto warning = resolve_cluster_token(settings.cluster); !warning.empty())
      std::cerr << "herd coordinator: warning: " << warning << '\n';
    if (auto problem = listen_problem(listen.host, settings.cluster,
                                      listen_given ? std::string() : default_listen);
        !problem.empty())
      throw std::invalid_argument(problem);
    const int metrics_port = settings.metrics.port;
    if (metrics_port != 0 && metrics_port == listen.port)
      throw std::invalid_argument("metrics.port = " + std::to_string(metrics_port) +
                                  " is --listen's port too: the metrics endpoint and the nodes' "
                                  "gate need a port each");
  });
  if (!preparation.run)
    return preparation.exit_status;
  auto& prepared = preparation.run;
  const auto& config = prepared->config;
  const auto resume = parsed.options.find("--resume");
  const std::string resume_path = resume == parsed.options.end() ? "" : resume->second;
  progress_printer printer(std::cout, progress_options_for(config));
  cluster::cluster_options options;
  if (!resume_path.empty()) {
    try {
      auto loaded = cluster::load_cluster_checkpoint(config, *prepared->data, resume_path);
      auto as_resumed = config; // the workers are the checkpoint's, not a count to compare
      as_resumed.train.workers = loaded.workers;
      announce_resume("coordinator", loaded.file, *loaded.state, as_resumed);
      options.resume = std::move(loaded.state);
      options.resume_file = loaded.file;
    } catch (const checkpoint::checkpoint_error& unusable) {
      say_resume_refused("coordinator", resume_path, unusable);
      return exit_bad_input;
    }
  }
  options.listen_host = listen.host;
  options.port = listen.port;
  options.observer = &printer;
  options.metrics = prepared->metrics;
  std::optional<cluster::cluster_session> session;
  try {
    session.emplace(config, prepared->data, options);
  } catch (const config::invalid_config& invalid) {
    print_config_errors("coordinator", invalid);
    return exit_bad_input;
  } catch (const std::runtime_error& failure) {
    std::cerr << "herd coordinator: --listen " << listen.host << ':' << listen.port << ": "
              << failure.what() << '\n';
    return exit_bad_input;
  }
  std::ostringstream header;
  header << "herd coordinator: " << config.train.algorithm << ", batch " << config.train.batch_size
         << " per worker, " << describe_model(*prepared->model) << ", "
         << prepared->data->train.name << "; listening on " << listen.host << ':' << session->port()
         << ", waiting for ";
  if (options.resume)
    header << "the " << options.resume->parts.size() << " node(s) that hold the checkpoint's parts";
  else
    header << config.cluster.min_nodes << " node(s)";
  std::cout << for_standard_output(header.str()) << std::endl;
  if (prepared->endpoint)
    std::cout << "herd coordinator: Prometheus metrics at " << prepared->endpoint->url()
              << std::endl;
  // The report names the workers the nodes brought, not the file's train.workers.
  auto effective = config;
  const int status = await_run("coordinator",
                               {[&session, &effective](std::chrono::milliseconds timeout) {
                                  auto summary = session->wait_for(timeout);
                                  if (summary)
                                    effective = session->effective_config();
                                  return summary;
                                },
                                [&session] { session->request_stop(); },
                                [&session] { return session->started(); }},
                               printer, effective, parsed.report_file);
  return serve_final_metrics("coordinator", *prepared, status);
}

int run_node_command(const std::vector<std::string>& args) {
  cluster::node_options options;
  bool help = false;
  std::vector<std::string> settings;
  try {
    std::string coordinator;
    for (argument_reader reader(args); !reader.done(); reader.next()) {
      const std::string& arg = reader.current();
      if (arg == "--help" || arg == "-h") {
        help = true;
      } else if (reader.is("--coordinator")) {
        coordinator = reader.value("--coordinator", " (HOST:PORT)");
      } else if (reader.is("--workers")) {
        options.workers = positive_count("--workers", reader.value("--workers"));
      } else if (reader.is("--data-host")) {
        options.data_host = reader.value("--data-host", " (this node's address)");
      } else if (reader.is("--name")) {
        options.name = reader.value("--name");
        if (cluster::printable(options.name) != options.name)
          throw std::invalid_argument("--name \"" + cluster::printable(options.name) +
                                      "\": a control character would split the coordinator's "
                                      "log lines, and a byte that is not UTF-8 lose its report; "
                                      "give a name of printable characters");
      } else if (reader.is("--checkpoint-dir")) {
        options.checkpoint_dir = reader.value("--checkpoint-dir", " (a directory)");
      } else if (reader.is_setting()) {
        settings.push_back(arg);
      } else {
        throw std::invalid_argument("unknown argument '" + arg + "' (see herd node --help)");
      }
    }
    if (help) {
      std::cout << fit_help(node_help());
      return exit_ok;
    }
    if (coordinator.empty())
      throw std::invalid_argument("--coordinator HOST:PORT is required");
    const auto address = parse_endpoint("--coordinator", coordinator, false);
    options.coordinator_host = address.host;
    options.coordinator_port = address.port;
    if (!options.data_host.empty())
      check_data_host(options.data_host);
    options.cluster = load_for_command("node", "", settings).cluster;
    if (auto warning = resolve_cluster_token(options.cluster); !warning.empty())
      std::cerr << "herd node: warning: " << warning << '\n';
    // The TLS files load here, as the coordinator's do before it listens: a file that cannot
    // serve is bad input (exit 2), found before the node tries to reach anyone.
    const auto& cluster = options.cluster;
    if (!cluster.tls_ca.empty())
      cluster::tls_context(cluster::tls_context::side::client,
                           {cluster.tls_ca, cluster.tls_cert, cluster.tls_key});
  } catch (const config::invalid_config& invalid) {
    print_config_errors("node", invalid);
    return exit_bad_input;
  } catch (const std::invalid_argument& bad) {
    std::cerr << "herd node: " << bad.what() << '\n';
    return exit_bad_input;
  }
  if (interrupted_before_run("node"))
    return exit_interrupted;
  options.load_data = [](const config::run_config& config) {
    auto data = load_data(config, "node");
    if (stop_signalled()) // loading may take seconds; this node has not joined the run yet
      throw std::runtime_error("interrupted by " + stop_signal_name());
    return data;
  };
  // One write per line: a refused data-plane peer is told from a reduction's thread. Stamped
  // with the seconds since the node started, as the coordinator's lines are with its run's: a
  // log outside journald says when the node lost the coordinator, and how long it waited.
  const auto started = std::chrono::steady_clock::now();
  const auto stamp = [started] {
    return log_stamp(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  };
  options.on_notice = [stamp](const std::string& text) {
    std::cout << (stamp() + "herd node: " + text + "\n") << std::flush;
  };
  std::cout << "herd node: " << options.workers << " worker(s), coordinator "
            << options.coordinator_host << ':' << options.coordinator_port << std::endl;
  // Ctrl-C, SIGTERM (systemctl stop, a VM's preemption notice) or SIGHUP leaves the job; a
  // second one ends the process at once (main() installed the handlers).
  options.leave = &stop_signal_flag();
  const auto outcome = cluster::run_node(options);
  if (!outcome.ok) { // stamped too: when a node failed is what its log is read for
    std::cerr << stamp() << "herd node: " << outcome.error << '\n';
    return stop_signalled() ? exit_interrupted : exit_run_failed;
  }
  return exit_ok;
}

} // namespace

std::string coordinator_help() {
  std::ostringstream out;
  out << "usage: herd coordinator [--listen HOST:PORT] [--config FILE] [--report FILE]\n"
         "                        [--resume PATH] [--section.key=value ...]\n\n"
         "Hosts a training run across processes: the group coordinator, evaluation, metrics\n"
         "and the data plane's rendezvous. Nodes join with herd node --coordinator HOST:PORT;\n"
         "the run starts once cluster.min-nodes have joined, with train.workers = the sum of\n"
         "their --workers. A node started after that joins the running job in place of a lost\n"
         "node's workers. Prints the same summary and writes the same report as herd train.\n\n"
         "  --listen HOST:PORT      the address nodes connect to (default "
      << default_listen
      << "; port 0 = any)\n"
         "  --config FILE, -c FILE  read settings from an INI file\n"
         "  --report FILE           also write the run summary as JSON to FILE\n"
         "  --resume PATH           go on from a checkpoint this coordinator wrote (a file,\n"
         "                          or the newest in a directory): waits for nodes that hold\n"
         "                          its parts, each with its part's workers\n"
         "  --print-config          show the settings the run would use (the file, the\n"
         "                          overrides and the defaults; secrets left out) as INI,\n"
         "                          then exit; it checks the settings, not the model's\n"
         "                          layers, the backend's device or the data, which a run\n"
         "                          checks once it has loaded the data\n"
         "  --help, -h              show this help\n"
         "  --version               show the version\n\n"
         "Settings (as for herd train; the nodes receive them from here):\n"
      << config::describe_keys(keys_of("coordinator"))
      << "\nThe control plane is CAF over TCP behind a gate that admits only Herd nodes (with\n"
         "cluster.token, those that know it), encrypted with TLS when cluster.tls-* are set. On\n"
         "an address other machines reach (the default), a token of at least 16 characters is\n"
         "required: put it in a file only you can read and pass --cluster.token-file=FILE here\n"
         "and to every node. With TLS, the data plane's messages (Gloo over TCP) are sealed\n"
         "too (cluster.data-encryption); without it they are not: keep nodes on a private\n"
         "network (docs/deploy.md).\n\n"
         "With checkpoint.dir set, each node writes its workers' part of a checkpoint to its\n"
         "own disk and this coordinator's file commits it once every part is written\n"
         "(docs/checkpoints.md). Restarted with --resume, it goes on from the newest one.\n\n"
         "Exit status: 0 done, 1 the run failed (or its final checkpoint could not be\n"
         "written, interrupted or not), 2 bad input, 130 interrupted (Ctrl-C, SIGTERM or\n"
         "SIGHUP; before the nodes joined, it ends at once without a run).\n";
  return out.str();
}

std::string node_help() {
  std::ostringstream out;
  out << "usage: herd node --coordinator HOST:PORT [--workers N] [--data-host ADDRESS]\n"
         "                 [--name NAME] [--checkpoint-dir DIR] [--cluster.key=value ...]\n\n"
         "Joins a run hosted by herd coordinator and runs N workers in this process until the\n"
         "coordinator says the job is over. The run's settings come from the coordinator; the\n"
         "dataset must be on this machine at the configured data.path.\n\n"
         "  --coordinator HOST:PORT  the coordinator's --listen address (required)\n"
         "  --workers N              workers in this process (default 1)\n"
         "  --data-host ADDRESS      the address the data plane listens on and the other nodes\n"
         "                           dial (default: the address this host reaches the\n"
         "                           coordinator from)\n"
         "  --name NAME              this node's name in logs (default: the host name)\n"
         "  --checkpoint-dir DIR     where this node writes its parts of the run's checkpoints\n"
         "                           (default: the run's checkpoint.dir, on this machine); a\n"
         "                           coordinator resuming one gives this node the workers of\n"
         "                           the part it finds here\n"
         "  --help, -h               show this help\n"
         "  --version                show the version\n\n"
         "Settings of the node itself (heartbeat, timeouts, token and TLS must match the\n"
         "coordinator's; cluster.token-file keeps the token out of the process list):\n"
      << config::describe_keys(keys_of("node"))
      << "\nA node started while the job runs joins it in place of a lost node's workers (its\n"
         "--workers at most the number lost): its workers take a live worker's model and\n"
         "go on from there. Ctrl-C, SIGTERM or SIGHUP leaves the job: the coordinator counts\n"
         "this node's workers lost at once and the run goes on without them. A node that\n"
         "loses the coordinator tries to join again for cluster.rejoin-s: the same job, or a\n"
         "coordinator restarted with --resume, which gives it its checkpoint part's workers.\n\n"
         "Exit status: 0 the job is over (or the node left it on Ctrl-C/SIGTERM/SIGHUP), 1 the\n"
         "node failed, was turned away or lost the coordinator, or the job failed there (the\n"
         "coordinator's reason is printed), 2 bad input, 130 interrupted before it joined.\n";
  return out.str();
}

int coordinator_command(const std::vector<std::string>& args) {
  return run_guarded(
      "coordinator", [&args] { return run_coordinator(args); }, standard_output::progress);
}

int node_command(const std::vector<std::string>& args) {
  return run_guarded(
      "node", [&args] { return run_node_command(args); }, standard_output::progress);
}

} // namespace herd::cli
