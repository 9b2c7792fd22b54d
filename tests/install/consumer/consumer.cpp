// Trains two workers on generated data through the installed library and checks that they learnt.
#include "actors/train_session.hpp"
#include "herd/config.hpp"

#include <iostream>

int main() {
  auto config = herd::config::load("", {"--train.workers=2", "--train.epochs=2",
                                        "--data.dataset=synthetic", "--model.hidden=[16]"});
  auto data = std::make_shared<herd::models::train_test_split>(
      herd::models::make_synthetic_split(2000, 400, 20, 4, 5));
  herd::actors::train_session session(config, data);
  const auto summary = session.run();
  std::cout << "consumer: " << summary.rounds << " rounds, test accuracy "
            << summary.final_test_accuracy.value_or(0.0) << '\n';
  return summary.stop_reason == "epochs" && summary.final_test_accuracy.value_or(0.0) > 0.9 ? 0 : 1;
}
