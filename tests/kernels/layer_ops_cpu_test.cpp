// The layer-kernel tests (layer_ops_oracle_test.cpp, layer_ops_behaviour_test.cpp) for every
// implementation on host memory: cpu_ops().
#include <gtest/gtest.h>

#include "kernel_test_support.hpp"
#include "layer_ops_fixture.hpp"

namespace herd::kernels::test_support {
namespace {

INSTANTIATE_TEST_SUITE_P(all, layer_ops, ::testing::ValuesIn(implementations_under_test()),
                         implementation_name);

} // namespace
} // namespace herd::kernels::test_support
