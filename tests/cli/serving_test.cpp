// Serving a checkpoint where its run's data are not: herd predict reads no training data, herd
// evaluate only the test files of a .npy dataset (and reports per class, with the confusion
// matrix), and a checkpoint written by the previous format version is still read.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/npy_file.hpp"
#include "support/read_file.hpp"
#include "support/subprocess.hpp"
#include "support/temp_directory.hpp"

namespace {

using testing::HasSubstr;
using testing::Not;

// Written by Herd at format version 5, with its data and what that version printed for it.
const std::string v5_dir = std::string(HERD_SOURCE_DIR) + "/tests/data/checkpoint-v5/";

herd::testing::process_result herd(std::vector<std::string> args) {
  args.insert(args.begin(), HERD_BINARY);
  return herd::testing::run_process(args, std::chrono::seconds(120));
}

class serving : public testing::Test {
protected:
  std::string path(const std::string& name) const { return dir_.file(name); }

  // n samples of 4 floats around three seeded centres, labels cycling 0, 1, 2.
  void write_clusters(const std::string& stem, std::size_t n, std::uint32_t seed) const {
    std::mt19937 random(seed);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    const float centres[3][4] = {{3, 0, 0, 0}, {0, 3, 0, 0}, {0, 0, 3, 0}};
    std::vector<float> x;
    std::vector<std::int32_t> y;
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = static_cast<std::int32_t>(i % 3);
      for (const float centre : centres[c])
        x.push_back(centre + noise(random));
      y.push_back(c);
    }
    herd::testing::write_npy(path(stem + "_x.npy"), "<f4", {n, 4}, x);
    herd::testing::write_npy(path(stem + "_y.npy"), "<i4", {n}, y);
  }

  std::vector<std::string> npy_settings() const {
    return {"--data.dataset=npy", "--data.train-features=" + path("train_x.npy"),
            "--data.train-labels=" + path("train_y.npy"),
            "--data.test-features=" + path("test_x.npy"),
            "--data.test-labels=" + path("test_y.npy")};
  }

  herd::testing::temp_directory dir_;
};

// Trained on .npy files that are then deleted, the checkpoint still predicts (the same
// probabilities to the digit) and evaluates on its test files alone; a test file it cannot use is
// refused naming the key, and a path the checkpoint's settings gave says so.
TEST_F(serving, predict_needs_no_training_data_and_evaluate_only_the_test_files) {
  write_clusters("train", 120, 1);
  write_clusters("test", 60, 2);
  auto args = npy_settings();
  args.insert(args.begin(), "train");
  for (const char* setting : {"--model.hidden=8", "--train.workers=2", "--train.batch-size=10",
                              "--train.epochs=3", "--train.lr=0.1"})
    args.push_back(setting);
  args.push_back("--checkpoint.dir=" + path("ckpt"));
  const auto trained = herd(args);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::vector<std::string> predict{"predict", "--checkpoint", path("ckpt"), "--input",
                                         path("test_x.npy")};
  const auto before = herd(predict);
  ASSERT_EQ(before.exit_code, 0) << before.output;
  const auto evaluated_before = herd({"evaluate", "--checkpoint", path("ckpt")});
  ASSERT_EQ(evaluated_before.exit_code, 0) << evaluated_before.output;

  std::filesystem::remove(path("train_x.npy"));
  std::filesystem::remove(path("train_y.npy"));
  const auto after = herd(predict);
  ASSERT_EQ(after.exit_code, 0) << after.output;
  EXPECT_EQ(after.output, before.output);
  const auto evaluated = herd({"evaluate", "--checkpoint", path("ckpt")});
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  EXPECT_EQ(evaluated.output, evaluated_before.output);
  EXPECT_THAT(evaluated.output,
              HasSubstr("test set        " + path("test_x.npy") + ", " + path("test_y.npy")));

  // Another labelled file of the same kind: the first 30 test samples.
  write_clusters("part", 30, 2);
  const auto part =
      herd({"evaluate", "--checkpoint", path("ckpt"), "--data.test-features=" + path("part_x.npy"),
            "--data.test-labels=" + path("part_y.npy")});
  ASSERT_EQ(part.exit_code, 0) << part.output;
  EXPECT_THAT(part.output, HasSubstr(", 30 samples\n"));

  // Samples of another width, and a label the model does not score, name the key and the file.
  herd::testing::write_npy(path("wide_x.npy"), "<f4", {2, 5}, std::vector<float>(10, 0.5f));
  herd::testing::write_npy(path("two_y.npy"), "<i4", {2}, std::vector<std::int32_t>{0, 1});
  const auto wide =
      herd({"evaluate", "--checkpoint", path("ckpt"), "--data.test-features=" + path("wide_x.npy"),
            "--data.test-labels=" + path("two_y.npy")});
  EXPECT_EQ(wide.exit_code, 2) << wide.output;
  EXPECT_THAT(wide.output, HasSubstr("data.test-features: " + path("wide_x.npy") +
                                     " holds samples of 5 but the checkpoint's model takes 4"));
  herd::testing::write_npy(path("narrow_x.npy"), "<f4", {2, 4}, std::vector<float>(8, 0.5f));
  herd::testing::write_npy(path("four_y.npy"), "<i4", {2}, std::vector<std::int32_t>{0, 3});
  const auto beyond = herd({"evaluate", "--checkpoint", path("ckpt"),
                            "--data.test-features=" + path("narrow_x.npy"),
                            "--data.test-labels=" + path("four_y.npy")});
  EXPECT_EQ(beyond.exit_code, 2) << beyond.output;
  EXPECT_THAT(beyond.output, HasSubstr("data.test-labels: " + path("four_y.npy") +
                                       " holds labels up to 3, but the checkpoint's model "
                                       "scores classes 0 to 2"));

  std::filesystem::remove(path("test_y.npy"));
  const auto gone = herd({"evaluate", "--checkpoint", path("ckpt")});
  EXPECT_EQ(gone.exit_code, 2) << gone.output;
  EXPECT_THAT(gone.output, HasSubstr(path("test_y.npy") + ": no such file (data.test-labels = \"" +
                                     path("test_y.npy") + "\" is the checkpoint's setting"));
  EXPECT_THAT(gone.output, HasSubstr("give --data.test-labels=PATH"));
  // Given on the command line, the path is the user's own: no word about the checkpoint.
  const auto given =
      herd({"evaluate", "--checkpoint", path("ckpt"), "--data.test-labels=" + path("absent.npy")});
  EXPECT_EQ(given.exit_code, 2) << given.output;
  EXPECT_THAT(given.output, Not(HasSubstr("checkpoint's setting")));
}

// A model trained on uint8 values (divided by 255) records it: its export says so, and herd
// predict and evaluate refuse floats far above 1 (bytes not divided), which it would answer
// wrongly without a word; the same samples as uint8 are taken.
TEST_F(serving, a_model_trained_on_bytes_takes_bytes_or_byte_over_255) {
  std::vector<std::uint8_t> bytes(60 * 4);
  std::vector<float> unscaled(bytes.size());
  std::vector<std::int32_t> labels(60);
  for (std::size_t i = 0; i < 60; ++i) {
    labels[i] = static_cast<std::int32_t>(i % 3);
    for (std::size_t v = 0; v < 4; ++v) {
      bytes[i * 4 + v] = static_cast<std::uint8_t>((v == i % 3 ? 200 : 20) + (i * 7 + v) % 40);
      unscaled[i * 4 + v] = bytes[i * 4 + v];
    }
  }
  herd::testing::write_npy(path("b_x.npy"), "|u1", {60, 4}, bytes);
  herd::testing::write_npy(path("f_x.npy"), "<f4", {60, 4}, unscaled);
  herd::testing::write_npy(path("b_y.npy"), "<i4", {60}, labels);
  const auto trained =
      herd({"train", "--data.dataset=npy", "--data.train-features=" + path("b_x.npy"),
            "--data.train-labels=" + path("b_y.npy"), "--data.test-features=" + path("b_x.npy"),
            "--data.test-labels=" + path("b_y.npy"), "--model.hidden=8", "--train.workers=1",
            "--train.epochs=2", "--checkpoint.dir=" + path("ckpt")});
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const auto exported = herd({"export", "--checkpoint", path("ckpt"), "--out", path("ex")});
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  const auto model = nlohmann::json::parse(herd::testing::read_file(path("ex/model.json")));
  EXPECT_EQ(model["input_normalisation"]["scaled_bytes"], true);
  EXPECT_THAT(model["input_normalisation"]["applies_to"].get<std::string>(),
              HasSubstr("bytes divided by 255"));
  EXPECT_EQ(herd({"predict", "--checkpoint", path("ckpt"), "--input", path("b_x.npy")}).exit_code,
            0);
  const auto floats = herd({"predict", "--checkpoint", path("ckpt"), "--input", path("f_x.npy")});
  EXPECT_EQ(floats.exit_code, 2) << floats.output;
  EXPECT_THAT(floats.output, HasSubstr(path("f_x.npy") + " holds values up to 2"));
  const auto evaluated =
      herd({"evaluate", "--checkpoint", path("ckpt"), "--data.test-features=" + path("f_x.npy")});
  EXPECT_EQ(evaluated.exit_code, 2) << evaluated.output;
  EXPECT_THAT(evaluated.output,
              HasSubstr("data.test-features: " + path("f_x.npy") + " holds values up to 2"));
}

// herd evaluate's per-class numbers and confusion matrix agree with its overall accuracy and with
// each other, in the text and the --report file alike.
TEST_F(serving, evaluate_reports_per_class_precision_and_the_confusion_matrix) {
  const auto evaluated = herd({"evaluate", "--checkpoint", v5_dir + "model.ckpt", "--report",
                               path("e.json"), "--data.test-features=" + v5_dir + "test_x.npy",
                               "--data.test-labels=" + v5_dir + "test_y.npy",
                               "--data.train-features=" + v5_dir + "train_x.npy",
                               "--data.train-labels=" + v5_dir + "train_y.npy"});
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  const auto report = nlohmann::json::parse(herd::testing::read_file(path("e.json")));
  const auto confusion = report["confusion"].get<std::vector<std::vector<std::size_t>>>();
  ASSERT_EQ(confusion.size(), 3u);
  std::size_t right = 0;
  std::size_t total = 0;
  for (std::size_t t = 0; t < 3; ++t) {
    const auto& row = report["classes"][t];
    std::size_t samples = 0;
    std::size_t predicted = 0;
    for (std::size_t c = 0; c < 3; ++c) {
      samples += confusion[t][c];
      predicted += confusion[c][t];
    }
    EXPECT_EQ(samples, 10u) << "the fixture's labels cycle through 3 classes over 30 samples";
    EXPECT_EQ(row["samples"].get<std::size_t>(), samples);
    EXPECT_EQ(row["predicted"].get<std::size_t>(), predicted);
    EXPECT_DOUBLE_EQ(row["accuracy"].get<double>(), double(confusion[t][t]) / double(samples));
    EXPECT_DOUBLE_EQ(row["precision"].get<double>(), double(confusion[t][t]) / double(predicted));
    right += confusion[t][t];
    total += samples;
  }
  EXPECT_EQ(total, 30u);
  EXPECT_DOUBLE_EQ(report["test_accuracy"].get<double>(), double(right) / double(total));
  // The text holds the same matrix, a row per true class.
  for (std::size_t t = 0; t < 3; ++t) {
    std::string row = "  " + std::string(13, ' ') + std::to_string(t);
    for (std::size_t c = 0; c < 3; ++c) {
      const auto count = std::to_string(confusion[t][c]);
      row += std::string(4 - count.size(), ' ') + count;
    }
    EXPECT_THAT(evaluated.output, HasSubstr(row + "\n")) << row;
  }
  EXPECT_EQ(herd({"evaluate", "--checkpoint", v5_dir + "model.ckpt", "--report",
                  path("no-such-dir/e.json")})
                .exit_code,
            2);
}

// A float32 .npy file as herd export writes it: its shape and values.
struct npy_array {
  std::vector<std::size_t> shape;
  std::vector<float> values;
};

npy_array read_npy(const std::string& file) {
  const auto bytes = herd::testing::read_file(file);
  const auto length = static_cast<std::size_t>(static_cast<unsigned char>(bytes[8])) |
                      static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
  const std::string header = bytes.substr(10, length);
  EXPECT_NE(header.find("'descr': '<f4'"), std::string::npos) << file << ": " << header;
  npy_array array;
  const auto open = header.find("'shape': (") + 10;
  std::istringstream dims(header.substr(open, header.find(')', open) - open));
  for (std::string dim; std::getline(dims, dim, ',');)
    if (dim.find_first_not_of(' ') != std::string::npos)
      array.shape.push_back(std::stoul(dim));
  array.values.resize((bytes.size() - 10 - length) / 4);
  std::memcpy(array.values.data(), bytes.data() + 10 + length, array.values.size() * 4);
  return array;
}

// The values of a float32 .npy file, whatever its shape.
std::vector<float> read_npy_floats(const std::string& file) {
  return read_npy(file).values;
}

// The tensors herd export wrote, by file name, each checked against model.json's shape.
std::map<std::string, npy_array> exported(const std::string& directory, nlohmann::json& model) {
  model = nlohmann::json::parse(herd::testing::read_file(directory + "/model.json"));
  std::map<std::string, npy_array> tensors;
  for (const auto& layer : model["layers"])
    for (const auto& tensor : layer["tensors"]) {
      auto array = read_npy(directory + "/" + tensor["file"].get<std::string>());
      EXPECT_EQ(array.shape, tensor["shape"].get<std::vector<std::size_t>>());
      std::size_t count = 1;
      for (const auto extent : array.shape)
        count *= extent;
      EXPECT_EQ(array.values.size(), count) << tensor;
      tensors[tensor["file"].get<std::string>()] = std::move(array);
    }
  return tensors;
}

// y = x W^T + b, W {out, in}.
std::vector<float> dense(const std::vector<float>& x, const npy_array& w, const npy_array& b) {
  std::vector<float> y(w.shape[0]);
  for (std::size_t o = 0; o < w.shape[0]; ++o) {
    double sum = b.values[o];
    for (std::size_t i = 0; i < w.shape[1]; ++i)
      sum += static_cast<double>(w.values[o * w.shape[1] + i]) * x[i];
    y[o] = static_cast<float>(sum);
  }
  return y;
}

std::vector<float> relu(std::vector<float> x) {
  for (auto& v : x)
    v = std::max(v, 0.0f);
  return x;
}

std::vector<float> softmax(const std::vector<float>& scores) {
  const float top = *std::max_element(scores.begin(), scores.end());
  std::vector<float> p(scores.size());
  double total = 0;
  for (std::size_t i = 0; i < p.size(); ++i)
    total += p[i] = std::exp(scores[i] - top);
  for (auto& v : p)
    v = static_cast<float>(v / total);
  return p;
}

// The exported tensors, put through the layers by hand in the layouts herd export documents,
// give the probabilities herd predict gives: an MLP (the format-5 checkpoint), and a CNN whose
// convolution weights are {filters, channels, kernel_h, kernel_w}.
TEST_F(serving, exported_tensors_compute_what_herd_predict_gives) {
  const auto mlp = herd({"export", "--checkpoint", v5_dir + "model.ckpt", "--out", path("mlp"),
                         "--data.train-features=" + v5_dir + "train_x.npy",
                         "--data.train-labels=" + v5_dir + "train_y.npy",
                         "--data.test-features=" + v5_dir + "test_x.npy",
                         "--data.test-labels=" + v5_dir + "test_y.npy"});
  ASSERT_EQ(mlp.exit_code, 0) << mlp.output;
  nlohmann::json model;
  auto tensors = exported(path("mlp"), model);
  EXPECT_EQ(model["model"], "4: flatten, dense 8, relu, dense 3");
  EXPECT_EQ(model["classes"], 3);
  ASSERT_EQ(tensors.size(), 4u);
  const auto samples = read_npy_floats(v5_dir + "test_x.npy");
  std::istringstream csv(herd::testing::read_file(v5_dir + "predictions.csv"));
  std::string line;
  std::getline(csv, line); // the header
  for (std::size_t n = 0; std::getline(csv, line); ++n) {
    const std::vector<float> x(samples.begin() + 4 * n, samples.begin() + 4 * n + 4);
    const auto p =
        softmax(dense(relu(dense(x, tensors["02-dense-weight.npy"], tensors["02-dense-bias.npy"])),
                      tensors["04-dense-weight.npy"], tensors["04-dense-bias.npy"]));
    std::istringstream row(line);
    for (std::size_t c = 0; c < 3; ++c) {
      std::string value;
      std::getline(row, value, ',');
      EXPECT_NEAR(p[c], std::stof(value), 1e-5) << "sample " << n << ", class " << c;
    }
  }

  // A CNN on 1x6x6 images: conv 2 3x3 pad 1, relu, maxpool 2x2, flatten, dense 3.
  std::mt19937 random(3);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> images(48 * 36);
  std::vector<std::int32_t> labels(48);
  for (std::size_t i = 0; i < 48; ++i) {
    labels[i] = static_cast<std::int32_t>(i % 3);
    for (std::size_t v = 0; v < 36; ++v)
      images[i * 36 + v] = noise(random) + (v % 3 == i % 3 ? 2.0f : 0.0f);
  }
  herd::testing::write_npy(path("img_x.npy"), "<f4", {48, 1, 6, 6}, images);
  herd::testing::write_npy(path("img_y.npy"), "<i4", {48}, labels);
  const auto trained = herd(
      {"train", "--data.dataset=npy", "--data.train-features=" + path("img_x.npy"),
       "--data.train-labels=" + path("img_y.npy"), "--data.test-features=" + path("img_x.npy"),
       "--data.test-labels=" + path("img_y.npy"),
       "--model.layers=conv 2 3x3 pad 1, relu, maxpool 2x2, flatten, dense 3", "--train.workers=1",
       "--train.batch-size=8", "--train.epochs=2", "--checkpoint.dir=" + path("cnn-ckpt")});
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const auto cnn = herd({"export", "--checkpoint", path("cnn-ckpt"), "--out", path("cnn")});
  ASSERT_EQ(cnn.exit_code, 0) << cnn.output;
  const auto predicted = herd({"predict", "--checkpoint", path("cnn-ckpt"), "--input",
                               path("img_x.npy"), "--output", path("p.npy")});
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  const auto probabilities = read_npy(path("p.npy"));
  tensors = exported(path("cnn"), model);
  const auto& w = tensors["01-conv-weight.npy"];
  const auto& b = tensors["01-conv-bias.npy"];
  ASSERT_EQ(w.shape, (std::vector<std::size_t>{2, 1, 3, 3}));
  for (std::size_t n = 0; n < 48; ++n) {
    const float* image = images.data() + n * 36;
    std::vector<float> pooled(2 * 3 * 3, -1e30f); // {filters, 3, 3}, then flat in that order
    for (std::size_t f = 0; f < 2; ++f)
      for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 6; ++x) {
          double sum = b.values[f];
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              const int at_y = y + i - 1;
              const int at_x = x + j - 1;
              if (at_y >= 0 && at_y < 6 && at_x >= 0 && at_x < 6)
                sum += static_cast<double>(w.values[f * 9 + static_cast<std::size_t>(i * 3 + j)]) *
                       image[at_y * 6 + at_x];
            }
          auto& cell = pooled[f * 9 + static_cast<std::size_t>((y / 2) * 3 + x / 2)];
          cell = std::max(cell, std::max(static_cast<float>(sum), 0.0f));
        }
    const auto p =
        softmax(dense(pooled, tensors["05-dense-weight.npy"], tensors["05-dense-bias.npy"]));
    for (std::size_t c = 0; c < 3; ++c)
      EXPECT_NEAR(p[c], probabilities.values[n * 3 + c], 1e-5) << "image " << n << ", class " << c;
  }
  EXPECT_THAT(cnn.output, Not(HasSubstr("earlier export"))) << cnn.output;
  // Over the MLP's export: its tensor files, which the new model.json does not name, are listed.
  const auto over = herd({"export", "--checkpoint", path("cnn-ckpt"), "--out", path("mlp")});
  ASSERT_EQ(over.exit_code, 0) << over.output;
  EXPECT_THAT(over.output,
              HasSubstr(path("mlp") +
                        " also holds 4 tensor file(s) of an earlier export that "
                        "model.json does not name (02-dense-bias.npy, "
                        "02-dense-weight.npy, 04-dense-bias.npy, 04-dense-weight.npy)"));
}

// Two `herd predict` CSVs with the same header and rows, the same predicted classes, and
// probabilities within 1e-5: the last digit of a probability depends on the machine's BLAS
// kernels (a CPU with AVX-512 rounds differently from one without).
void expect_same_predictions(const std::string& got, const std::string& expected) {
  std::istringstream got_rows(got), expected_rows(expected);
  std::string got_line, expected_line;
  std::size_t rows = 0;
  while (std::getline(expected_rows, expected_line)) {
    ASSERT_TRUE(std::getline(got_rows, got_line)) << "row " << rows << " is missing";
    std::istringstream got_cells(got_line), expected_cells(expected_line);
    std::string got_cell, expected_cell;
    while (std::getline(expected_cells, expected_cell, ',')) {
      ASSERT_TRUE(std::getline(got_cells, got_cell, ',')) << "row " << rows;
      if (rows == 0 || expected_cell.find('.') == std::string::npos)
        EXPECT_EQ(got_cell, expected_cell) << "row " << rows; // the header, the class
      else
        EXPECT_NEAR(std::stod(got_cell), std::stod(expected_cell), 1e-5) << "row " << rows;
    }
    EXPECT_FALSE(std::getline(got_cells, got_cell, ',')) << "row " << rows << " is longer";
    ++rows;
  }
  EXPECT_FALSE(std::getline(got_rows, got_line)) << "more rows than expected";
  EXPECT_GT(rows, 1u);
}

// A checkpoint of format version 5 says nothing of its inputs: herd evaluate and predict load the
// run's data for them and answer what that version answered; herd train resumes from it.
TEST_F(serving, a_checkpoint_of_format_version_5_is_still_read) {
  const std::vector<std::string> data{"--data.train-features=" + v5_dir + "train_x.npy",
                                      "--data.train-labels=" + v5_dir + "train_y.npy",
                                      "--data.test-features=" + v5_dir + "test_x.npy",
                                      "--data.test-labels=" + v5_dir + "test_y.npy"};
  auto args = data;
  args.insert(args.begin(), {"evaluate", "--checkpoint", v5_dir + "model.ckpt"});
  const auto evaluated = herd(args);
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.output;
  // What version 5's herd evaluate printed (tests/data/checkpoint-v5/README.md).
  EXPECT_THAT(evaluated.output, HasSubstr("  test accuracy   0.8000\n  test loss       0.5629\n"));
  for (const char* row :
       {"               0    0.7000", "               1    0.9000", "               2    0.8000"})
    EXPECT_THAT(evaluated.output, HasSubstr(row));

  args = data;
  args.insert(args.begin(), {"predict", "--checkpoint", v5_dir + "model.ckpt", "--input",
                             v5_dir + "test_x.npy", "--output", path("p.csv")});
  const auto predicted = herd(args);
  ASSERT_EQ(predicted.exit_code, 0) << predicted.output;
  expect_same_predictions(herd::testing::read_file(path("p.csv")),
                          herd::testing::read_file(v5_dir + "predictions.csv"));

  // Its training set is what says the model's inputs: without it, the key is named.
  args = data;
  args[0] = "--data.train-features=" + path("absent.npy");
  args.insert(args.begin(),
              {"predict", "--checkpoint", v5_dir + "model.ckpt", "--input", v5_dir + "test_x.npy"});
  const auto without = herd(args);
  EXPECT_EQ(without.exit_code, 2) << without.output;
  EXPECT_THAT(without.output, HasSubstr(path("absent.npy") + ": no such file"));

  // Resumed (from a copy: the run writes beside it), it goes on from round 12 and writes the
  // current format.
  std::filesystem::create_directory(path("ckpt"));
  std::filesystem::copy_file(v5_dir + "model.ckpt",
                             path("ckpt/herd-001796515969083-000000000012.ckpt"));
  args = data;
  args.insert(args.begin(), {"train", "--data.dataset=npy", "--model.hidden=8", "--train.workers=2",
                             "--train.batch-size=10", "--train.epochs=6", "--train.lr=0.1",
                             "--resume", path("ckpt")});
  const auto resumed = herd(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("(round 12, epoch 4)"));
  EXPECT_THAT(resumed.output, HasSubstr("evaluation at round 18 (epoch 6.00)"));
  std::filesystem::remove(path("ckpt/herd-001796515969083-000000000012.ckpt"));
  const auto newer = herd({"predict", "--checkpoint", path("ckpt"), "--input",
                           v5_dir + "test_x.npy"}); // no data settings: format 6 needs none
  EXPECT_EQ(newer.exit_code, 0) << newer.output;
}

} // namespace
