// The process's resources from /proc; see process_metrics.hpp.
#include "monitoring/process_metrics.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace herd::monitoring {

namespace {

metric_family one(const char* name, const char* help, metric_type type, double value) {
  metric_family family;
  family.name = name;
  family.help = help;
  family.type = type;
  client_metric metric;
  metric.value = value;
  family.metrics.push_back(metric);
  return family;
}

// The fields of /proc/self/stat after the command's name (which may hold spaces and
// parentheses: it ends at the last ')'), the first of them field 3 (the state).
std::vector<std::string> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string text;
  std::getline(in, text); // one line
  const auto name_end = text.rfind(')');
  std::vector<std::string> fields;
  if (name_end == std::string::npos)
    return fields;
  std::istringstream rest(text.substr(name_end + 1));
  for (std::string field; rest >> field;)
    fields.push_back(field);
  return fields;
}

// The machine's boot time (Unix seconds), from /proc/stat's btime; 0 where unread.
double boot_time_seconds() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double seconds = 0.0;
      in >> seconds;
      return seconds;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0.0;
}

} // namespace

std::vector<metric_family> process_families() {
  std::vector<metric_family> families;
  // Fields 14 and 15 (user and system time), 20 (threads), 22 (start, after boot), 23 (virtual
  // memory, bytes) and 24 (resident pages), counted from field 3 at index 0.
  const auto fields = stat_fields();
  if (fields.size() > 21) {
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    try {
      families.push_back(one("process_cpu_seconds_total", "User and system CPU time, in seconds",
                             metric_type::counter,
                             (std::stod(fields[11]) + std::stod(fields[12])) / ticks));
      families.push_back(one("process_resident_memory_bytes", "Resident memory, in bytes",
                             metric_type::gauge, std::stod(fields[21]) * page));
      families.push_back(one("process_virtual_memory_bytes", "Virtual memory, in bytes",
                             metric_type::gauge, std::stod(fields[20])));
      families.push_back(one("process_threads", "Threads of the process", metric_type::gauge,
                             std::stod(fields[17])));
      if (const double boot = boot_time_seconds(); boot > 0.0)
        families.push_back(one("process_start_time_seconds",
                               "Start time of the process since the Unix epoch, in seconds",
                               metric_type::gauge, boot + std::stod(fields[19]) / ticks));
    } catch (const std::exception&) { // a field that is no number: a /proc of another format
      families.clear();
    }
  }
  std::error_code unread;
  std::size_t open = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", unread), end; !unread && it != end;
       it.increment(unread))
    ++open;
  if (!unread)
    families.push_back(one("process_open_fds", "Open file descriptors", metric_type::gauge,
                           static_cast<double>(open)));
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY)
    families.push_back(one("process_max_fds", "The most file descriptors the process may open",
                           metric_type::gauge, static_cast<double>(files.rlim_cur)));
  return families;
}

} // namespace herd::monitoring
