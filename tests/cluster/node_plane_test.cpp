// A node's data-plane options: every [comm] setting and the coordinator's key arrive in them.
#include "cluster/node_plane.hpp"

#include "comm/errors.hpp"

#include <gtest/gtest.h>

namespace {

TEST(node_plane, every_comm_setting_and_the_key_reach_the_planes_options) {
  herd::config::run_config config;
  const auto clear =
      herd::cluster::node_plane_options(config, "10.0.0.2", "job/g0", std::chrono::seconds(7), "");
  EXPECT_EQ(clear.hostname, "10.0.0.2");
  EXPECT_EQ(clear.prefix, "job/g0");
  EXPECT_EQ(clear.timeout, std::chrono::seconds(7));
  EXPECT_EQ(clear.compression, herd::comm::wire_format::fp32);
  EXPECT_FALSE(clear.error_feedback);
  EXPECT_FALSE(clear.seal_key.has_value());
  EXPECT_EQ(clear.lanes, 1);

  config.comm.compression = "fp16";
  config.comm.error_feedback = true;
  config.comm.seal_threads = 3;
  config.comm.connections = 2;
  std::string key(herd::comm::plane_key{}.size(), '\0');
  for (std::size_t i = 0; i < key.size(); ++i)
    key[i] = static_cast<char>(i * 7 + 1);
  const auto sealed =
      herd::cluster::node_plane_options(config, "10.0.0.2", "job/g1", std::chrono::seconds(7), key);
  EXPECT_EQ(sealed.compression, herd::comm::wire_format::fp16);
  EXPECT_TRUE(sealed.error_feedback);
  ASSERT_TRUE(sealed.seal_key.has_value());
  for (std::size_t i = 0; i < key.size(); ++i)
    EXPECT_EQ((*sealed.seal_key)[i], static_cast<std::uint8_t>(key[i])) << i;
  EXPECT_EQ(sealed.seal_threads, 3);
  EXPECT_EQ(sealed.lanes, 2);
  config.comm.compression = "bf16";
  EXPECT_EQ(herd::cluster::node_plane_options(config, "h", "p", std::chrono::seconds(1), "")
                .compression,
            herd::comm::wire_format::bf16);

  // A key of another size is refused by size.
  try {
    herd::cluster::node_plane_options(config, "h", "p", std::chrono::seconds(1), "short");
    FAIL() << "a 5-byte key was taken";
  } catch (const herd::comm::comm_error& refused) {
    EXPECT_NE(std::string(refused.what()).find("a data-plane key of 5 bytes"), std::string::npos)
        << refused.what();
  }
}

TEST(node_plane, the_connected_line_names_each_setting_that_is_on) {
  herd::config::run_config config;
  EXPECT_EQ(herd::cluster::plane_connected_text(config, "10.0.0.2", 3, false),
            "data plane connected (10.0.0.2, 3 nodes, in the clear)");
  config.comm.compression = "fp16";
  config.comm.seal_threads = 1;
  EXPECT_EQ(herd::cluster::plane_connected_text(config, "10.0.0.2", 3, true),
            "data plane connected (10.0.0.2, 3 nodes, fp16 on the wire, sealed by 1 thread)");
  config.comm.error_feedback = true;
  config.comm.connections = 2;
  EXPECT_EQ(herd::cluster::plane_connected_text(config, "10.0.0.2", 3, true),
            "data plane connected (10.0.0.2, 3 nodes, fp16 on the wire with error feedback, "
            "sealed by 2 threads, 2 connections to each peer)"); // a thread for each connection
}

} // namespace
