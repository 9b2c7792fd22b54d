// Request heads and replies for the /metrics endpoint (http_request.hpp): finding where a head
// ends, checking it per RFC 9112, and writing a reply's bytes.
#include "monitoring/http_request.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

namespace herd::monitoring {

namespace {

constexpr std::string_view metrics_path = "/metrics";
constexpr const char* allowed_methods = "GET, HEAD";

const char* reason_phrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 413:
    return "Payload Too Large";
  case 414:
    return "URI Too Long";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Error";
  }
}

/// Where the head in `received` ends (just past its empty line), searching from `from`;
/// std::string_view::npos while it is incomplete.
std::size_t head_end(std::string_view received, std::size_t from) {
  for (std::size_t at = received.find('\n', from); at != std::string_view::npos;
       at = received.find('\n', at + 1)) {
    if (at + 1 < received.size() && received[at + 1] == '\n')
      return at + 2;
    if (at + 2 < received.size() && received[at + 1] == '\r' && received[at + 2] == '\n')
      return at + 3;
  }
  return std::string_view::npos;
}

bool is_token_char(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') ||
         (byte >= 'A' && byte <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), is_token_char);
}

bool equals_ignoring_case(std::string_view left, std::string_view right) {
  return left.size() == right.size() &&
         std::equal(left.begin(), left.end(), right.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t'))
    text.remove_suffix(1);
  return text;
}

/// The path of an origin-form ("/metrics?x") or absolute-form ("http://host/metrics") target;
/// empty when it is neither.
std::string_view target_path(std::string_view target) {
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() &&
        equals_ignoring_case(target.substr(0, scheme.size()), scheme)) {
      const auto path_start = target.find('/', scheme.size());
      target = path_start == std::string_view::npos ? "/" : target.substr(path_start);
      break;
    }
  }
  if (target.empty() || (target.front() != '/' && target != "*"))
    return {};
  return target.substr(0, target.find_first_of("?#"));
}

request_parse refusal(int status, http_request request = {}) {
  request_parse parse;
  parse.outcome = request_outcome::refused;
  parse.request = std::move(request);
  parse.refusal_status = status;
  return parse;
}

/// Checks a complete head (request line, headers, empty line).
request_parse parse_head(std::string_view head, std::size_t max_body_bytes) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const auto line_end = head.find('\n');
    auto line = head.substr(0, line_end);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    if (line.empty())
      break;
    lines.push_back(line);
    head.remove_prefix(line_end == std::string_view::npos ? head.size() : line_end + 1);
  }
  if (lines.empty())
    return refusal(400);

  // method SP request-target SP HTTP-version, single spaces, nothing else.
  const auto request_line = lines.front();
  const auto first_space = request_line.find(' ');
  const auto second_space = first_space == std::string_view::npos
                                ? std::string_view::npos
                                : request_line.find(' ', first_space + 1);
  if (second_space == std::string_view::npos ||
      request_line.find(' ', second_space + 1) != std::string_view::npos)
    return refusal(400);
  const auto method = request_line.substr(0, first_space);
  const auto target = request_line.substr(first_space + 1, second_space - first_space - 1);
  const auto version = request_line.substr(second_space + 1);
  const bool target_is_printable = std::all_of(target.begin(), target.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte < 0x7f;
  });
  const auto path = target_path(target);
  if (!is_token(method) || !target_is_printable || path.empty())
    return refusal(400);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    const bool names_a_version = version.size() >= 6 && version.substr(0, 5) == "HTTP/" &&
                                 std::isdigit(static_cast<unsigned char>(version[5])) != 0;
    return refusal(names_a_version ? 505 : 400);
  }
  request_parse parse;
  parse.request = {std::string(method), std::string(target), std::string(path),
                   std::string(version)};

  std::string_view content_length;
  for (std::size_t index = 1; index < lines.size(); ++index) {
    const auto line = lines[index];
    const auto colon = line.find(':');
    // No whitespace before the colon and no folded continuation lines (RFC 9112, 5.1 and 5.2).
    if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
      return refusal(400, std::move(parse.request));
    if (!equals_ignoring_case(line.substr(0, colon), "Content-Length"))
      continue;
    const auto value = trim(line.substr(colon + 1));
    const bool is_number =
        !value.empty() && value.size() <= 18 && std::all_of(value.begin(), value.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c)) != 0;
        });
    if (!is_number || (!content_length.empty() && content_length != value))
      return refusal(400, std::move(parse.request));
    content_length = value;
  }
  if (!content_length.empty() && std::stoull(std::string(content_length)) > max_body_bytes)
    return refusal(413, std::move(parse.request));
  parse.outcome = request_outcome::accepted;
  return parse;
}

} // namespace

request_parse parse_request(std::string_view received, const http_request_limits& limits,
                            std::size_t searched_bytes) {
  // The head's end may straddle what was searched and what is new: back up by its length.
  const auto end = head_end(received, searched_bytes >= 3 ? searched_bytes - 3 : 0);
  if (end != std::string_view::npos && end <= limits.max_head_bytes)
    return parse_head(received.substr(0, end), limits.max_body_bytes);
  if (end == std::string_view::npos && received.size() <= limits.max_head_bytes)
    return {};
  const auto request_line_end = received.find('\n');
  const bool request_line_too_long =
      request_line_end == std::string_view::npos || request_line_end > limits.max_head_bytes;
  return refusal(request_line_too_long ? 414 : 431);
}

http_reply text_reply(int status, std::string body) {
  http_reply reply;
  reply.status = status;
  reply.body = std::move(body);
  return reply;
}

std::optional<http_reply> refusal_for(const request_parse& parse,
                                      const http_request_limits& limits) {
  auto refusal = [&]() -> std::optional<http_reply> {
    switch (parse.refusal_status) {
    case 0:
      break;
    case 413:
      return text_reply(413, "413 payload too large: /metrics takes no request body\n");
    case 414:
      return text_reply(414, "414 URI too long: the request line exceeds " +
                                 std::to_string(limits.max_head_bytes) + " bytes\n");
    case 431:
      return text_reply(431, "431 request header fields too large: the request head exceeds " +
                                 std::to_string(limits.max_head_bytes) + " bytes\n");
    case 505:
      return text_reply(505, "505 HTTP version not supported: use HTTP/1.1 or HTTP/1.0\n");
    default:
      return text_reply(400, "400 bad request: malformed request line or header; this endpoint "
                             "serves only GET /metrics\n");
    }
    if (parse.request.path != metrics_path)
      return text_reply(404, "404 not found: this endpoint serves only GET /metrics\n");
    if (parse.request.method != "GET" && parse.request.method != "HEAD") {
      auto not_allowed =
          text_reply(405, "405 method not allowed: /metrics answers only GET and HEAD\n");
      not_allowed.allow = allowed_methods;
      return not_allowed;
    }
    return std::nullopt;
  }();
  if (refusal)
    refusal->head_only = parse.request.method == "HEAD";
  return refusal;
}

std::string format_reply(const http_reply& reply) {
  std::string text = "HTTP/1.1 " + std::to_string(reply.status) + " " +
                     reason_phrase(reply.status) + "\r\nContent-Type: " + reply.content_type +
                     "\r\nContent-Length: " + std::to_string(reply.body.size()) + "\r\n";
  if (!reply.allow.empty())
    text += "Allow: " + reply.allow + "\r\n";
  text += "Connection: close\r\n\r\n";
  if (!reply.head_only)
    text += reply.body;
  return text;
}

} // namespace herd::monitoring
