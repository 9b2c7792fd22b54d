// Certificates for the control plane's TLS tests, made with the openssl command: a CA and the
// certificates it signs, as docs/deploy.md tells operators to make them.
#pragma once

#include <cstdlib>
#include <string>

namespace herd::testing {

/// Makes `<name>.pem` and `<name>.key` in `dir`: a self-signed CA valid for a day. True on success.
inline bool make_certificate_authority(const std::string& dir, const std::string& name) {
  const std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir + "/" +
                              name + ".key -out " + dir + "/" + name +
                              ".pem -days 1 -subj /CN=" + name + " >/dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

/// Makes `<name>.pem` and `<name>.key` in `dir`, signed by the CA `authority` made there before,
/// for the subject alternative names `alt_names` (openssl's syntax; by default this machine's
/// loopback, where the tests' coordinators and nodes meet).
inline bool make_signed_certificate(const std::string& dir, const std::string& name,
                                    const std::string& authority,
                                    const std::string& alt_names = "DNS:localhost,IP:127.0.0.1") {
  const std::string base = dir + "/" + name;
  const std::string request = "openssl req -newkey rsa:2048 -nodes -keyout " + base + ".key -out " +
                              base + ".csr -subj /CN=" + name + " >/dev/null 2>&1";
  const std::string extensions = "printf 'subjectAltName=" + alt_names + "\\n' > " + base + ".ext";
  const std::string sign = "openssl x509 -req -in " + base + ".csr -CA " + dir + "/" + authority +
                           ".pem -CAkey " + dir + "/" + authority + ".key -CAcreateserial -out " +
                           base + ".pem -days 1 -extfile " + base + ".ext >/dev/null 2>&1";
  return std::system(request.c_str()) == 0 && std::system(extensions.c_str()) == 0 &&
         std::system(sign.c_str()) == 0;
}

} // namespace herd::testing
