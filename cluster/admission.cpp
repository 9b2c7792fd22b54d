// The registry's rules for admitting nodes; see admission.hpp.
#include "cluster/admission.hpp"

#include "actors/messages.hpp"
#include "actors/run_parts.hpp"
#include "herd/config.hpp"

#include <algorithm>

namespace herd::cluster {

namespace {

// The length of the UTF-8 sequence of the byte at `at` of `text` (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF); 0 when it is not one.
std::size_t utf8_sequence(const std::string& text, std::size_t at) {
  const auto byte = [&text](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf; // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    low = lead == 0xe0 ? 0xa0 : 0x80;  // not overlong
    high = lead == 0xed ? 0x9f : 0xbf; // not a surrogate
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    low = lead == 0xf0 ? 0x90 : 0x80;  // not overlong
    high = lead == 0xf4 ? 0x8f : 0xbf; // not past U+10FFFF
  }
  if (length == 0 || at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high)
    return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf)
      return 0;
  return length;
}

} // namespace

std::string printable(const std::string& text) {
  std::string shown;
  for (std::size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) {
      // U+0080 to U+009F are control characters too (a terminal takes U+009B for an escape).
      const bool c1_control =
          byte == 0xc2 && at + 1 < text.size() && static_cast<unsigned char>(text[at + 1]) < 0xa0;
      if (const auto length = utf8_sequence(text, at); length > 0 && !c1_control) {
        shown.append(text, at, length);
        at += length - 1;
        continue;
      }
    }
    if (byte >= 0x20 && byte != 0x7f && byte < 0x80) {
      shown += c;
    } else if (c == '\n') {
      shown += "\\n";
    } else if (c == '\t') {
      shown += "\\t";
    } else {
      static const char digits[] = "0123456789abcdef";
      shown += "\\x";
      shown += digits[byte >> 4];
      shown += digits[byte & 0xf];
    }
  }
  return shown;
}

std::optional<std::string> hello_refusal(const actors::node_hello& hello,
                                         const config::cluster_section& mine, registry_phase phase,
                                         bool over, std::size_t nodes) {
  if (printable(hello.name) != hello.name)
    return "the node's name \"" + printable(hello.name) +
           "\" holds a control character or a byte that is not UTF-8 (it would split the log's "
           "lines, or lose the run's report); give it a name of printable characters (herd "
           "node --name)";
  if (hello.protocol != actors::cluster_protocol_version)
    return "node " + hello.name + " speaks cluster protocol " + std::to_string(hello.protocol) +
           ", this coordinator " + std::to_string(actors::cluster_protocol_version) +
           "; run the same Herd version everywhere";
  if (hello.workers < 1 || hello.workers > 1024)
    return "node " + hello.name + " offers " + std::to_string(hello.workers) +
           " workers; it must be between 1 and 1024";
  // Each side declares the other lost after its own node timeout without a heartbeat: one that
  // waits less than twice the other's interval loses a healthy peer as the cluster forms.
  const auto twice = [](std::int32_t ms) { return 2 * static_cast<std::int64_t>(ms); };
  if (hello.heartbeat_ms <= 0 || mine.node_timeout_ms < twice(hello.heartbeat_ms) ||
      hello.node_timeout_ms < twice(mine.heartbeat_ms))
    return "node " + hello.name + " sends heartbeats every " + std::to_string(hello.heartbeat_ms) +
           " ms and counts a peer lost after " + std::to_string(hello.node_timeout_ms) +
           " ms of silence, this coordinator every " + std::to_string(mine.heartbeat_ms) +
           " ms and after " + std::to_string(mine.node_timeout_ms) +
           " ms: each side's timeout must be at least twice the other's heartbeat, or a healthy "
           "process is counted lost; give every process the same cluster.heartbeat-ms and "
           "cluster.node-timeout-ms";
  if (over)
    return "the job is over";
  if (phase == registry_phase::connecting)
    return "the cluster has formed with " + std::to_string(nodes) +
           " nodes and is starting; once it runs, a node joins only in place of lost workers";
  return std::nullopt;
}

std::optional<std::string> running_join_refusal(const actors::node_hello& hello,
                                                const std::vector<std::int32_t>& free,
                                                bool slots_taken, int run_workers) {
  if (free.empty())
    return slots_taken ? "the job is running and the slots of its lost workers are taken by "
                         "nodes joining now; a node joins a running job only in place of a lost "
                         "node's workers"
                       : "the job is running and none of its " + std::to_string(run_workers) +
                             " workers is lost; a node joins a running job only in place of a "
                             "lost node's workers";
  if (static_cast<int>(free.size()) < hello.workers)
    return "node " + hello.name + " offers " + count_of(hello.workers, "worker") + " but only " +
           std::to_string(free.size()) + " slot(s) are free (" + worker_list(free) +
           "); start it with --workers " + std::to_string(free.size());
  return std::nullopt;
}

part_claim claim_part(const actors::node_hello& hello,
                      const std::vector<actors::part_record>& parts,
                      const std::vector<bool>& claimed, const std::string& checkpoint) {
  part_claim claim;
  std::string open_parts;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (claimed[i])
      continue;
    open_parts += (open_parts.empty() ? "" : ", ") + parts[i].file;
    if (std::find(hello.parts.begin(), hello.parts.end(), parts[i].file) == hello.parts.end())
      continue;
    const auto workers = static_cast<int>(parts[i].workers.size());
    if (hello.workers != workers) {
      claim.refusal = "node " + hello.name + " holds part " + parts[i].file + " of " +
                      count_of(workers, "worker") + " but offers " +
                      count_of(hello.workers, "worker") + "; start it with --workers " +
                      std::to_string(workers);
      return claim;
    }
    claim.part = i;
    return claim;
  }
  claim.refusal = "the job resumes from " + checkpoint + ", and node " + hello.name +
                  (hello.parts.empty() ? " holds no checkpoint part"
                                       : " holds none of its parts still missing") +
                  " (" + (open_parts.empty() ? std::string("none is missing") : open_parts) +
                  "); start a node whose --checkpoint-dir holds one, or copy the part there";
  return claim;
}

std::string unresumed_parts(const actors::node_hello& hello) {
  return " holds checkpoint parts (the newest " + hello.parts.back() +
         "): this job starts from the first step; to go on from a checkpoint, start the "
         "coordinator with --resume";
}

std::optional<std::string> settings_refusal(const config::run_config& config,
                                            std::size_t training_samples) {
  auto errors = config::validate_run(config);
  if (errors.empty())
    errors = config::validate_against_data(config, training_samples);
  if (errors.empty())
    return std::nullopt;
  std::string text = "the settings do not fit the " + std::to_string(config.train.workers) +
                     " workers of the nodes: ";
  for (std::size_t i = 0; i < errors.size(); ++i)
    text += (i > 0 ? "; " : "") + errors[i].message;
  return text;
}

std::string worker_list(const std::vector<std::int32_t>& slots) {
  if (slots.empty())
    return "no workers";
  if (slots.size() == 1)
    return "worker " + std::to_string(slots.front());
  const bool contiguous = slots.back() - slots.front() + 1 == static_cast<int>(slots.size());
  if (contiguous)
    return "workers " + std::to_string(slots.front()) + "-" + std::to_string(slots.back());
  return "workers " + actors::index_list(slots);
}

std::string count_of(int n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

} // namespace herd::cluster
