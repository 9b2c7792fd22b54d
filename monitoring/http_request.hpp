// The /metrics endpoint's HTTP/1.1 (metrics_endpoint.cpp) as plain functions of bytes: what the
// bytes a client has sent so far amount to (RFC 9112, strictly), which requests are refused and
// how, and the bytes of a reply. No sockets here: the endpoint owns the connections, and tests
// drive these directly.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace herd::monitoring {

/// What a request may take. Past either bound it is refused, never buffered further.
struct http_request_limits {
  /// Request line, headers and the empty line together: a longer head is refused with 431, or
  /// with 414 when the request line alone is longer.
  std::size_t max_head_bytes = 8192;
  /// The most a Content-Length may announce; more is refused with 413.
  std::size_t max_body_bytes = 4096;
};

/// A request line's parts.
struct http_request {
  std::string method;  // a token, as sent ("GET")
  std::string target;  // as sent: origin-form "/metrics?x" or absolute-form "http://host/metrics"
  std::string path;    // the target's path, without query or fragment ("/metrics")
  std::string version; // "HTTP/1.1" or "HTTP/1.0"
};

enum class request_outcome {
  need_more_bytes, // the head is not complete yet, and within its bound
  accepted,        // a well-formed head: route `request`
  refused,         // answer `refusal_status` without routing
};

struct request_parse {
  request_outcome outcome = request_outcome::need_more_bytes;
  /// When accepted, the request. When a header or the Content-Length refused it, the request
  /// line's parts still, so that a refused HEAD is answered without a body; empty otherwise.
  http_request request;
  /// When refused: 400 (malformed), 413 (body too large), 414 (request line too long), 431 (head
  /// too large) or 505 (an HTTP version other than 1.1 and 1.0); 0 otherwise.
  int refusal_status = 0;
};

/// What `received`, the bytes a client has sent so far, amount to. Bare LF line ends count as
/// CRLF (RFC 9112, 2.2); folded lines, whitespace before a colon and conflicting Content-Length
/// values are 400, because a proxy in front could read them differently. The result depends only
/// on the bytes: once it is not need_more_bytes, more bytes leave it as it is.
/// `searched_bytes` is received's size when an earlier call for the same connection returned
/// need_more_bytes (0 for none): the search for the head's end resumes there, so a head that
/// arrives in many pieces is searched once.
request_parse parse_request(std::string_view received, const http_request_limits& limits,
                            std::size_t searched_bytes = 0);

/// A reply that closes its connection.
struct http_reply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  /// The Allow header's value ("GET, HEAD"), which a 405 must carry; no header when empty.
  std::string allow;
  /// A reply to HEAD: the headers announce the body's length, and the body is left out.
  bool head_only = false;
};

/// A plain-text reply, the form every refusal and error takes.
http_reply text_reply(int status, std::string body);

/// The reply to every request but GET or HEAD /metrics: a refused head gets its refusal_status
/// (414 and 431 name `limits.max_head_bytes`), another path 404, another method 405 with Allow.
/// std::nullopt for GET or HEAD /metrics, which the exposition answers. Each body says what to
/// send instead; a HEAD's reply leaves it out.
std::optional<http_reply> refusal_for(const request_parse& parse,
                                      const http_request_limits& limits);

/// The bytes to send: status line, Content-Type, Content-Length, Allow when set,
/// "Connection: close", the empty line and the body.
std::string format_reply(const http_reply& reply);

} // namespace herd::monitoring
