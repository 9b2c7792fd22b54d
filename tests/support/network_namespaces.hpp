// Network namespaces for the cluster tests: a hub namespace holding a bridge (10.77.0.1/24), and
// hosts, each a namespace of its own with eth0 = 10.77.0.<n>, wired to the bridge by a veth pair.
// A host's link can be taken down and brought back (a partition, and its healing) and limited
// in bandwidth with tc's tbf, both ways. Everything made is removed with the object. Needs root
// (CAP_SYS_ADMIN) and iproute2; create() returns false where namespaces cannot be made.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace herd::testing {

class network_namespaces {
public:
  // Names carry the test process's pid: tests running side by side never share a namespace.
  network_namespaces() : prefix_("herd" + std::to_string(::getpid() % 100000)) {}
  ~network_namespaces() {
    for (const auto& name : made_)
      run("ip netns del " + name);
  }
  network_namespaces(const network_namespaces&) = delete;
  network_namespaces& operator=(const network_namespaces&) = delete;

  /// The hub, named "hub", with the bridge at 10.77.0.1.
  bool create() {
    if (!std::filesystem::exists("/usr/sbin/ip") || !add_namespace("hub"))
      return false;
    const std::string hub = name_of("hub");
    return run("ip -n " + hub + " link add br0 type bridge") &&
           run("ip -n " + hub + " link set br0 up") &&
           run("ip -n " + hub + " addr add 10.77.0.1/24 dev br0");
  }

  /// Host `name` at 10.77.0.<host>, its link up.
  bool add_host(const std::string& name, int host) {
    const std::string ns = name_of(name);
    const std::string hub = name_of("hub");
    return add_namespace(name) &&
           run("ip -n " + ns + " link add eth0 type veth peer name " + hub_end(name) + " netns " +
               hub) &&
           run("ip -n " + ns + " addr add " + address(host) + "/24 dev eth0") &&
           run("ip -n " + ns + " link set eth0 up") &&
           run("ip -n " + hub + " link set " + hub_end(name) + " master br0") &&
           run("ip -n " + hub + " link set " + hub_end(name) + " up");
  }

  static std::string address(int host) { return "10.77.0." + std::to_string(host); }

  /// Takes host `name`'s link down (nothing passes either way) or brings it back up. The host's
  /// own end stays up: its sockets see no error, only silence, as behind a failed switch.
  bool set_link(const std::string& name, bool up) {
    return run("ip -n " + name_of("hub") + " link set " + hub_end(name) + (up ? " up" : " down"));
  }

  /// Limits host `name`'s link to `rate` ("1gbit", "10gbit") in both directions (tbf).
  bool limit(const std::string& name, const std::string& rate) {
    const std::string tbf = " root tbf rate " + rate + " burst 1mb latency 50ms";
    return run("tc -n " + name_of(name) + " qdisc replace dev eth0" + tbf) &&
           run("tc -n " + name_of("hub") + " qdisc replace dev " + hub_end(name) + tbf);
  }

  /// The command prefix that runs a program in namespace `name`.
  std::vector<std::string> exec(const std::string& name) const {
    return {"/usr/sbin/ip", "netns", "exec", name_of(name)};
  }

private:
  std::string name_of(const std::string& name) const { return prefix_ + name; }
  std::string hub_end(const std::string& name) const { return prefix_ + name + "v"; }

  bool add_namespace(const std::string& name) {
    if (!run("ip netns add " + name_of(name)))
      return false;
    made_.push_back(name_of(name));
    return run("ip -n " + name_of(name) + " link set lo up");
  }

  static bool run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  }

  std::string prefix_;
  std::vector<std::string> made_;
};

} // namespace herd::testing
