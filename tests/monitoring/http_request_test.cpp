// http_request: the /metrics endpoint's request parsing and replies, driven directly with bytes.
// Each malformed form gets its status, odd but legal requests are accepted, and any bytes in any
// split parse as they do whole.
#include "monitoring/http_request.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using herd::monitoring::format_reply;
using herd::monitoring::http_reply;
using herd::monitoring::http_request_limits;
using herd::monitoring::parse_request;
using herd::monitoring::refusal_for;
using herd::monitoring::request_outcome;
using herd::monitoring::request_parse;
using herd::monitoring::text_reply;

/// A parse as one line people can read: "need more bytes", "accepted GET /metrics HTTP/1.1" or
/// "refused 400".
std::string describe(const request_parse& parse) {
  switch (parse.outcome) {
  case request_outcome::need_more_bytes:
    return "need more bytes";
  case request_outcome::accepted:
    return "accepted " + parse.request.method + " " + parse.request.target + " " +
           parse.request.version;
  case request_outcome::refused:
    return "refused " + std::to_string(parse.refusal_status);
  }
  return "unknown outcome";
}

std::string outcome_of(std::string_view received, const http_request_limits& limits = {}) {
  return describe(parse_request(received, limits));
}

/// Limits with a small head bound, so that tests can cross it with short strings.
http_request_limits head_bound(std::size_t max_head_bytes) {
  http_request_limits limits;
  limits.max_head_bytes = max_head_bytes;
  return limits;
}

const std::string accepted_get = "accepted GET /metrics HTTP/1.1";

TEST(http_request, an_incomplete_head_needs_more_bytes) {
  for (const char* received :
       {"", "G", "GET /metrics HTTP/1.1", "GET /metrics HTTP/1.1\r\n",
        "GET /metrics HTTP/1.1\r\n\r", "GET /metrics HTTP/1.1\r\nHost: x\r\n",
        "GET /metrics HTTP/1.1\r\nHost: x\r\n\r",
        // A lone CR ends no line.
        "GET /metrics HTTP/1.1\r\r", "GET /metrics HTTP/1.1\rHost: x\r\r"}) {
    EXPECT_EQ(outcome_of(received), "need more bytes") << received;
  }
}

TEST(http_request, a_complete_head_is_accepted_with_its_request_line_parts) {
  const auto parse =
      parse_request("GET /metrics?name[]=herd_up#top HTTP/1.0\r\nHost: x\r\n\r\n", {});
  ASSERT_EQ(parse.outcome, request_outcome::accepted);
  EXPECT_EQ(parse.request.method, "GET");
  EXPECT_EQ(parse.request.target, "/metrics?name[]=herd_up#top");
  EXPECT_EQ(parse.request.path, "/metrics");
  EXPECT_EQ(parse.request.version, "HTTP/1.0");
  EXPECT_EQ(parse.refusal_status, 0);
}

TEST(http_request, the_head_ends_at_its_first_empty_line_whatever_follows) {
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\n\r\nX : not a header, a body"), accepted_get);
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"), accepted_get);
}

TEST(http_request, bare_lf_line_ends_count_as_crlf) {
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\nHost: x\n\n"), accepted_get);
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\n\n"), accepted_get);
  // Mixed within one head, either way round.
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nHost: x\n\r\n"), accepted_get);
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\nHost: x\r\n\n"), accepted_get);
  // Still strict past the line ends.
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\nHost : x\n\n"), "refused 400");
}

TEST(http_request, folded_header_lines_are_400) {
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nX: 1\r\n folded\r\n\r\n"), "refused 400");
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nX: 1\r\n\tfolded: 2\r\n\r\n"), "refused 400");
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\n Host: x\r\n\r\n"), "refused 400");
}

TEST(http_request, whitespace_before_a_colon_is_400) {
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n"), "refused 400");
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nHost\t: x\r\n\r\n"), "refused 400");
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nContent-Length : 5000\r\n\r\n"), "refused 400");
}

TEST(http_request, header_lines_that_are_not_name_colon_value_are_400) {
  for (const char* line : {"No colon", ":no-name", "X(1): y", "X\x80: y", "X\x01: y"}) {
    EXPECT_EQ(outcome_of(std::string("GET /metrics HTTP/1.1\r\n") + line + "\r\n\r\n"),
              "refused 400")
        << line;
  }
}

TEST(http_request, conflicting_or_malformed_content_lengths_are_400) {
  const std::string start = "GET /metrics HTTP/1.1\r\n";
  EXPECT_EQ(outcome_of(start + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n"), "refused 400");
  // Compared as written: "01" and "1" are two lengths as far as a proxy may know.
  EXPECT_EQ(outcome_of(start + "Content-Length: 01\r\nContent-Length: 1\r\n\r\n"), "refused 400");
  for (const char* value : {"x", "-1", "+1", "1 1", "1.0", "", "0x10", "1234567890123456789"}) {
    EXPECT_EQ(outcome_of(start + "Content-Length: " + value + "\r\n\r\n"), "refused 400")
        << "'" << value << "'";
  }
  // The same length twice, however spelt around it, is one length.
  EXPECT_EQ(outcome_of(start + "Content-Length: 1\r\ncontent-length:\t1 \r\n\r\n"), accepted_get);
}

TEST(http_request, a_content_length_over_the_body_bound_is_413) {
  const std::string start = "GET /metrics HTTP/1.1\r\nContent-Length: ";
  EXPECT_EQ(outcome_of(start + "4096\r\n\r\n"), accepted_get);
  EXPECT_EQ(outcome_of(start + "4097\r\n\r\n"), "refused 413");
  EXPECT_EQ(outcome_of(start + "100000\r\n\r\n"), "refused 413");
  EXPECT_EQ(outcome_of(start + "999999999999999999\r\n\r\n"), "refused 413"); // 18 digits
  http_request_limits small_body;
  small_body.max_body_bytes = 10;
  EXPECT_EQ(outcome_of(start + "10\r\n\r\n", small_body), accepted_get);
  EXPECT_EQ(outcome_of(start + "11\r\n\r\n", small_body), "refused 413");
}

TEST(http_request, a_request_line_over_the_head_bound_is_414) {
  const auto limits = head_bound(64);
  const std::string long_line = "GET /" + std::string(80, 'p') + " HTTP/1.1";
  EXPECT_EQ(outcome_of(long_line + "\r\n\r\n", limits), "refused 414");
  // Refused as soon as the bound is crossed, without waiting for the line's end.
  EXPECT_EQ(outcome_of(long_line.substr(0, 64), limits), "need more bytes");
  EXPECT_EQ(outcome_of(long_line.substr(0, 65), limits), "refused 414");
}

TEST(http_request, a_head_over_the_bound_is_431_and_one_at_the_bound_is_accepted) {
  const std::string start = "GET /metrics HTTP/1.1\r\nX-Filler: ";
  const std::string end = "\r\n\r\n";
  const auto head_of = [&](std::size_t bytes) {
    return start + std::string(bytes - start.size() - end.size(), 'f') + end;
  };
  const auto limits = head_bound(64);
  EXPECT_EQ(outcome_of(head_of(64), limits), accepted_get);
  EXPECT_EQ(outcome_of(head_of(65), limits), "refused 431");
  EXPECT_EQ(outcome_of(head_of(256), limits), "refused 431");
  // Unfinished past the bound: 431 too, the request line being within it.
  EXPECT_EQ(outcome_of(head_of(200).substr(0, 64), limits), "need more bytes");
  EXPECT_EQ(outcome_of(head_of(200).substr(0, 65), limits), "refused 431");
  // The default bound is the endpoint's 8 KiB.
  EXPECT_EQ(outcome_of(head_of(8192)), accepted_get);
  EXPECT_EQ(outcome_of(head_of(8193)), "refused 431");
}

TEST(http_request, an_unknown_http_version_is_505_and_a_malformed_one_400) {
  for (const char* version : {"HTTP/2.0", "HTTP/2", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0"}) {
    EXPECT_EQ(outcome_of(std::string("GET /metrics ") + version + "\r\n\r\n"), "refused 505")
        << version;
  }
  for (const char* version : {"HTTP/", "HTTP/x", "http/1.1", "HTTP1.1", "FTP/1.1"}) {
    EXPECT_EQ(outcome_of(std::string("GET /metrics ") + version + "\r\n\r\n"), "refused 400")
        << version;
  }
}

TEST(http_request, malformed_request_lines_are_400) {
  for (const char* head : {
           "GARBAGE\r\n\r\n",
           "GET /metrics\r\n\r\n",            // HTTP/0.9
           "GET  /metrics HTTP/1.1\r\n\r\n",  // two spaces
           "GET /metrics  HTTP/1.1\r\n\r\n",  // two spaces
           "GET /metrics HTTP/1.1 \r\n\r\n",  // a trailing space
           "GET\t/metrics\tHTTP/1.1\r\n\r\n", // tabs
           "GET metrics HTTP/1.1\r\n\r\n",    // not a path
           "GET ftp://h/metrics HTTP/1.1\r\n\r\n",
           "G(T /metrics HTTP/1.1\r\n\r\n",     // not a token
           " /metrics HTTP/1.1\r\n\r\n",        // no method
           "GET /me\x7ftrics HTTP/1.1\r\n\r\n", // not printable
           "\r\n\r\n",                          // no request line
           "\n\n",
       }) {
    EXPECT_EQ(outcome_of(head), "refused 400") << head;
  }
}

TEST(http_request, odd_but_legal_requests_are_accepted) {
  const auto path_of = [](std::string_view received) {
    const auto parse = parse_request(received, {});
    EXPECT_EQ(parse.outcome, request_outcome::accepted) << received;
    return parse.request.path;
  };
  // Absolute-form, any case of scheme, with or without a path.
  EXPECT_EQ(path_of("GET http://127.0.0.1/metrics HTTP/1.1\r\n\r\n"), "/metrics");
  EXPECT_EQ(path_of("GET HTTPS://host:9090/metrics?x=1 HTTP/1.1\r\n\r\n"), "/metrics");
  EXPECT_EQ(path_of("GET http://host HTTP/1.1\r\n\r\n"), "/");
  EXPECT_EQ(path_of("OPTIONS * HTTP/1.1\r\n\r\n"), "*");
  EXPECT_EQ(path_of("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), "/metrics");
  // Methods are case-sensitive tokens: accepted here, left to routing (405).
  EXPECT_EQ(outcome_of("get /metrics HTTP/1.1\r\n\r\n"), "accepted get /metrics HTTP/1.1");
  EXPECT_EQ(outcome_of("M-SEARCH /metrics HTTP/1.1\r\n\r\n"),
            "accepted M-SEARCH /metrics HTTP/1.1");
  // Header names in any case: the body bound applies to each spelling of Content-Length.
  for (const char* name : {"content-length", "CONTENT-LENGTH", "cOnTeNt-LeNgTh"}) {
    EXPECT_EQ(outcome_of(std::string("GET /metrics HTTP/1.1\r\n") + name + ": 5000\r\n\r\n"),
              "refused 413")
        << name;
  }
  // Empty values, tabs around values and anything printable in them.
  EXPECT_EQ(outcome_of("GET /metrics HTTP/1.1\r\nX-Empty:\r\nX-Tab:\tv\t\r\nX: a:b \"c\"\r\n\r\n"),
            accepted_get);
}

TEST(http_request, a_refusal_for_a_header_keeps_the_request_line_and_others_do_not) {
  const auto folded = parse_request("HEAD /metrics HTTP/1.1\r\n folded\r\n\r\n", {});
  EXPECT_EQ(describe(folded), "refused 400");
  EXPECT_EQ(folded.request.method, "HEAD");
  EXPECT_EQ(folded.request.path, "/metrics");
  const auto too_large =
      parse_request("HEAD /metrics HTTP/1.1\r\nContent-Length: 5000\r\n\r\n", {});
  EXPECT_EQ(describe(too_large), "refused 413");
  EXPECT_EQ(too_large.request.method, "HEAD");

  // Refusals of the request line itself, or by size, know no method.
  const auto no_method = [](std::string_view received, const http_request_limits& limits) {
    const auto parse = parse_request(received, limits);
    EXPECT_EQ(parse.outcome, request_outcome::refused) << received;
    return parse.request.method;
  };
  EXPECT_EQ(no_method("HEAD /metrics HTTP/2.0\r\n\r\n", {}), "");
  EXPECT_EQ(no_method("HEAD  /metrics HTTP/1.1\r\n\r\n", {}), "");
  EXPECT_EQ(no_method("HEAD /metrics HTTP/1.1\r\nX: " + std::string(80, 'h'), head_bound(64)), "");
}

/// The status line of a reply's bytes.
std::string status_line(const std::string& reply) {
  return reply.substr(0, reply.find("\r\n"));
}

TEST(http_request, refusals_carry_their_status_and_say_what_to_send_instead) {
  const auto refused = [](std::string_view received, const http_request_limits& limits = {}) {
    const auto reply = refusal_for(parse_request(received, limits), limits);
    return reply ? std::to_string(reply->status) + " " + reply->body : std::string("none");
  };
  EXPECT_EQ(refused("GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n"),
            "400 400 bad request: malformed request line or header; this endpoint serves only "
            "GET /metrics\n");
  EXPECT_EQ(refused("GET /metrics HTTP/1.1\r\nContent-Length: 5000\r\n\r\n"),
            "413 413 payload too large: /metrics takes no request body\n");
  EXPECT_EQ(refused("GET /" + std::string(80, 'p'), head_bound(64)),
            "414 414 URI too long: the request line exceeds 64 bytes\n");
  EXPECT_EQ(refused("GET / HTTP/1.1\r\nX: " + std::string(80, 'h'), head_bound(64)),
            "431 431 request header fields too large: the request head exceeds 64 bytes\n");
  EXPECT_EQ(refused("GET /metrics HTTP/2.0\r\n\r\n"),
            "505 505 HTTP version not supported: use HTTP/1.1 or HTTP/1.0\n");
  for (const char* path : {"/", "/metric", "/metrics/", "/metricsx", "/Metrics", "*"}) {
    EXPECT_EQ(refused(std::string("GET ") + path + " HTTP/1.1\r\n\r\n"),
              "404 404 not found: this endpoint serves only GET /metrics\n")
        << path;
  }
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "TRACE", "get"}) {
    const auto reply =
        refusal_for(parse_request(std::string(method) + " /metrics HTTP/1.1\r\n\r\n", {}), {});
    ASSERT_TRUE(reply) << method;
    EXPECT_EQ(reply->status, 405) << method;
    EXPECT_EQ(reply->allow, "GET, HEAD") << method;
    EXPECT_EQ(reply->body, "405 method not allowed: /metrics answers only GET and HEAD\n");
  }
  EXPECT_EQ(refused("GET /metrics HTTP/1.1\r\n\r\n"), "none");
  EXPECT_EQ(refused("HEAD /metrics?x HTTP/1.0\r\n\r\n"), "none");
  EXPECT_EQ(refused("GET http://h/metrics HTTP/1.1\r\n\r\n"), "none");
}

TEST(http_request, a_refused_head_request_gets_its_headers_without_the_body) {
  const auto not_found = refusal_for(parse_request("HEAD /other HTTP/1.1\r\n\r\n", {}), {});
  ASSERT_TRUE(not_found);
  EXPECT_TRUE(not_found->head_only);
  const auto bad_header =
      refusal_for(parse_request("HEAD /metrics HTTP/1.1\r\nX : 1\r\n\r\n", {}), {});
  ASSERT_TRUE(bad_header);
  EXPECT_TRUE(bad_header->head_only);
  EXPECT_EQ(format_reply(*bad_header).find("bad request"), std::string::npos);
  // A version it cannot read leaves the method unknown: the body is sent.
  const auto version = refusal_for(parse_request("HEAD /metrics HTTP/2.0\r\n\r\n", {}), {});
  ASSERT_TRUE(version);
  EXPECT_FALSE(version->head_only);
}

TEST(http_request, a_reply_is_its_status_line_headers_and_body) {
  http_reply reply;
  reply.content_type = "text/plain; version=0.0.4; charset=utf-8";
  reply.body = "herd_up 1\n";
  EXPECT_EQ(format_reply(reply), "HTTP/1.1 200 OK\r\n"
                                 "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                                 "Content-Length: 10\r\n"
                                 "Connection: close\r\n"
                                 "\r\n"
                                 "herd_up 1\n");
  reply.head_only = true;
  EXPECT_EQ(format_reply(reply), "HTTP/1.1 200 OK\r\n"
                                 "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                                 "Content-Length: 10\r\n"
                                 "Connection: close\r\n"
                                 "\r\n");

  auto not_allowed = text_reply(405, "no\n");
  not_allowed.allow = "GET, HEAD";
  EXPECT_EQ(format_reply(not_allowed), "HTTP/1.1 405 Method Not Allowed\r\n"
                                       "Content-Type: text/plain; charset=utf-8\r\n"
                                       "Content-Length: 3\r\n"
                                       "Allow: GET, HEAD\r\n"
                                       "Connection: close\r\n"
                                       "\r\n"
                                       "no\n");
  EXPECT_EQ(format_reply(text_reply(200, "")), "HTTP/1.1 200 OK\r\n"
                                               "Content-Type: text/plain; charset=utf-8\r\n"
                                               "Content-Length: 0\r\n"
                                               "Connection: close\r\n"
                                               "\r\n");
}

TEST(http_request, every_status_the_endpoint_sends_has_its_reason_phrase) {
  const std::vector<std::pair<int, std::string>> expected = {
      {200, "OK"},
      {400, "Bad Request"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {413, "Payload Too Large"},
      {414, "URI Too Long"},
      {431, "Request Header Fields Too Large"},
      {500, "Internal Server Error"},
      {505, "HTTP Version Not Supported"},
      {418, "Error"}, // one it never sends
  };
  for (const auto& [status, phrase] : expected) {
    EXPECT_EQ(status_line(format_reply(text_reply(status, "x"))),
              "HTTP/1.1 " + std::to_string(status) + " " + phrase);
  }
}

/// A random byte string made mostly of HTTP's own pieces, so that many of them are complete
/// heads (valid or not) rather than noise that is only ever "need more" or 414.
std::string random_request_bytes(std::mt19937_64& random) {
  std::string bytes;
  if (random() % 8 == 0) { // noise
    bytes.resize(random() % 64);
    for (auto& byte : bytes)
      byte = static_cast<char>(random() % 256);
    return bytes;
  }
  static const std::vector<std::string> pieces = {"GET",
                                                  "HEAD",
                                                  "POST",
                                                  "get",
                                                  " ",
                                                  "  ",
                                                  "\t",
                                                  "/metrics",
                                                  "/",
                                                  "?a=b",
                                                  "#f",
                                                  "http://h",
                                                  "HTTPS://h:1",
                                                  "*",
                                                  "HTTP/1.1",
                                                  "HTTP/1.0",
                                                  "HTTP/2.0",
                                                  "HTTP/x",
                                                  "\r\n",
                                                  "\n",
                                                  "\r",
                                                  "\r\n\r\n",
                                                  "\n\n",
                                                  "\n\r\n",
                                                  "Host: x",
                                                  "Host : x",
                                                  " folded",
                                                  ":",
                                                  "Content-Length: ",
                                                  "content-length:",
                                                  "5",
                                                  "4096",
                                                  "4097",
                                                  "01",
                                                  "x",
                                                  "G(T",
                                                  "\x7f",
                                                  "\x80",
                                                  std::string(1, '\0')};
  if (random() % 2 == 0)
    bytes = "GET /metrics HTTP/1.1\r\n"; // then headers, mostly
  const auto piece_count = random() % 24;
  for (std::uint64_t piece = 0; piece < piece_count; ++piece) {
    if (random() % 6 == 0)
      bytes.push_back(static_cast<char>(random() % 256));
    else
      bytes += pieces[random() % pieces.size()];
  }
  if (random() % 2 == 0)
    bytes += random() % 2 == 0 ? "\r\n\r\n" : "\n\n";
  return bytes;
}

/// All of a parse, the parts a refusal keeps included.
std::string describe_all(const request_parse& parse) {
  return describe(parse) + " (method '" + parse.request.method + "', path '" + parse.request.path +
         "')";
}

TEST(http_request, any_bytes_in_any_split_parse_as_when_fed_whole) {
  std::mt19937_64 random(20261201);
  int refused = 0;
  int accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const auto bytes = random_request_bytes(random);
    // A small head bound for some, so that 414 and 431 come up.
    const auto limits = trial % 4 == 0 ? head_bound(1 + random() % 48) : http_request_limits{};
    const auto whole = describe_all(parse_request(bytes, limits));
    refused += whole.rfind("refused", 0) == 0 ? 1 : 0;
    accepted += whole.rfind("accepted", 0) == 0 ? 1 : 0;

    for (int split = 0; split < 4; ++split) {
      // Cumulative pieces as the endpoint reads them: parse after each, resuming the search, and
      // stop at the first answer.
      std::string received;
      request_parse fed;
      for (std::size_t at = 0;
           at < bytes.size() && fed.outcome == request_outcome::need_more_bytes;) {
        const auto length = std::min<std::size_t>(bytes.size() - at, 1 + random() % 9);
        const auto searched_bytes = received.size();
        received.append(bytes, at, length);
        at += length;
        fed = parse_request(received, limits, searched_bytes);
        // Resuming the search changes nothing.
        ASSERT_EQ(describe_all(fed), describe_all(parse_request(received, limits)))
            << "[" << received << "]";
      }
      ASSERT_EQ(describe_all(fed), whole) << "[" << bytes << "] split " << split;
    }
  }
  // The inputs reached both answers often, not just "need more".
  EXPECT_GT(refused, 2000);
  EXPECT_GT(accepted, 1000);
  RecordProperty("refused", refused);
  RecordProperty("accepted", accepted);
}

} // namespace
