// Ctrl-C, SIGTERM and SIGHUP for the commands that train (train, coordinator, node). main()
// installs the handlers before it reads an argument; they only set a flag. Before the run starts
// the commands check the flag between their steps and end with exit status 130 without training;
// once the run is going, await_run() (or the node's leave poll) turns it into a stop request. A
// second signal ends the process at once, unless the run has ended (run_has_ended()).
#pragma once

#include <atomic>
#include <functional>
#include <string>

namespace herd::cli {

/// Installs the handlers (sigaction) for SIGINT, SIGTERM and SIGHUP, once, first thing in main().
/// SIGHUP inherited as ignored (nohup) stays ignored.
void install_stop_signals();

/// SIGPIPE ignored, for the training commands: a reader of their output that goes away
/// (`herd train | head`) fails the writes to it instead of ending the run without its summary,
/// report and final checkpoint (the progress printer says so once, on standard error).
void keep_running_when_output_closes();

/// True once SIGINT, SIGTERM or SIGHUP arrived.
bool stop_signalled();

/// The flag stop_signalled() reads, for code that polls an atomic (cluster::node_options::leave).
const std::atomic<bool>& stop_signal_flag();

/// "SIGINT", "SIGTERM" or "SIGHUP": the first stop signal that arrived; "a signal" before any.
std::string stop_signal_name();

/// The run has ended and its summary, report and final checkpoint are written: from here on a
/// stop signal, first or second, only sets the flag stopped_after_run() reads (the process
/// serves its final metrics a while longer, and a signal ends that wait).
void run_has_ended();

/// True once a stop signal arrived after run_has_ended().
bool stopped_after_run();

/// For the steps before a run starts: when a stop signal has arrived, prints one line,
/// "herd <command>: interrupted by SIGINT before the run started; nothing was trained", and
/// returns true (the command then ends with exit status 130).
bool interrupted_before_run(const std::string& command);

/// Runs `work` (before a run: reading a dataset, which may take minutes and cannot be cut short)
/// on a thread of its own, and returns once it has; an exception it throws comes out here. A
/// stop signal meanwhile ends the process at once with exit status 130, after
/// interrupted_before_run()'s line: nothing is trained yet, and nothing is to be saved.
void run_unless_stopped(const std::string& command, const std::function<void()>& work);

} // namespace herd::cli
