// Background child processes for tests; see background_process.hpp.
#include "support/background_process.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <netinet/in.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "support/subprocess.hpp"

namespace herd::testing {

background_process::background_process(const std::vector<std::string>& argv, std::string log_file)
    : log_file_(std::move(log_file)) {
  const int log = ::open(log_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log < 0)
    throw std::runtime_error("cannot write " + log_file_ + ": " + std::strerror(errno));
  pid_ = ::fork();
  if (pid_ < 0)
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
    ::close(log);
    exec_child(argv);
  }
  ::close(log);
}

bool background_process::wait_for_output(const std::string& text,
                                         std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (output().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

background_process::~background_process() {
  stop(SIGTERM, std::chrono::seconds(10));
}

std::optional<int> background_process::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reaped_) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      if (WIFEXITED(status))
        exit_code_ = WEXITSTATUS(status);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

void background_process::stop(int signal, std::chrono::milliseconds timeout) {
  if (reaped_ || pid_ <= 0)
    return;
  ::kill(pid_, signal);
  wait(timeout);
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    wait(std::chrono::seconds(10));
  }
}

bool background_process::running() {
  wait(std::chrono::milliseconds(0));
  return !reaped_;
}

std::string background_process::output() const {
  std::ifstream in(log_file_);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int free_loopback_port() {
  const int socket = ::socket(AF_INET, SOCK_STREAM, 0);
  if (socket < 0)
    throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(socket, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(socket);
    throw std::runtime_error(std::string("cannot find a free port: ") + std::strerror(errno));
  }
  ::close(socket);
  return ntohs(address.sin_port);
}

} // namespace herd::testing
