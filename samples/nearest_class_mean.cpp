// A training-style program on the imgpack reader: a nearest-class-mean
// classifier. It "trains" on the train role of one fold of a split (the mean
// image of every class, over a few epochs of rotating augmented variants) and
// scores the val role of the same fold. If images and labels were ever
// delivered misaligned, the class means would blur together and the accuracy
// would fall to chance.
//
//   nearest_class_mean DATASET --split NAME [--fold F] [--epochs E]
//                      [--threads N] [--device host|cuda:N] [--min-accuracy A]
//
// Exits 0 when the accuracy is at least --min-accuracy (default 0), 1 otherwise.
#include <cstdio>
#include <cstdlib>
#include <imgpack/dataset.hpp>
#include <imgpack/error.hpp>
#include <imgpack/loader.hpp>
#include <string>
#include <vector>

namespace {

struct Args {
  std::string dataset, split, device = "host";
  int fold = 0;
  unsigned epochs = 3, threads = 2;
  double min_accuracy = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw imgpack::UsageError(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--split")
      a.split = value();
    else if (arg == "--fold")
      a.fold = std::stoi(value());
    else if (arg == "--epochs")
      a.epochs = static_cast<unsigned>(std::stoul(value()));
    else if (arg == "--threads")
      a.threads = static_cast<unsigned>(std::stoul(value()));
    else if (arg == "--device")
      a.device = value();
    else if (arg == "--min-accuracy")
      a.min_accuracy = std::stod(value());
    else if (a.dataset.empty() && !arg.starts_with("--"))
      a.dataset = arg;
    else
      throw imgpack::UsageError("unknown argument " + arg);
  }
  if (a.dataset.empty() || a.split.empty()) {
    throw imgpack::UsageError("usage: nearest_class_mean DATASET --split NAME [--fold F] ...");
  }
  return a;
}

imgpack::LoaderOptions options_for(const Args& a, imgpack::Role role) {
  imgpack::LoaderOptions o;
  o.selection.split = a.split;
  o.selection.fold = a.fold;
  o.selection.role = role;  // train rotates augmented variants, val reads clean ones
  o.batch_size = 16;
  o.threads = a.threads;
  o.last_batch = imgpack::LastBatch::partial;
  o.device = imgpack::parse_device(a.device);
  o.output = imgpack::OutputFormat::float32_nchw;  // (x / 255 - 0.5) / 0.25
  o.mean = {0.5f, 0.5f, 0.5f, 0};
  o.stddev = {0.25f, 0.25f, 0.25f, 1};
  return o;
}

// The images of a batch as host floats (a no-op copy for host delivery).
const float* host_images(const imgpack::Batch& batch, std::vector<float>& buffer) {
  if (!batch.on_device()) return batch.data_as<float>();
  buffer.resize(batch.bytes() / sizeof(float));
  batch.copy_to_host(buffer.data());
  return buffer.data();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    const imgpack::Dataset dataset = imgpack::Dataset::open(args.dataset);
    const std::size_t classes = dataset.index().class_names.size();
    const std::size_t dims = dataset.record_bytes();  // C*H*W values per image
    std::vector<float> buffer;

    // Train: the mean image of each class.
    std::vector<double> sums(classes * dims, 0.0);
    std::vector<std::size_t> counts(classes, 0);
    imgpack::Loader train(dataset, options_for(args, imgpack::Role::train));
    for (unsigned epoch = 0; epoch < args.epochs; ++epoch) {
      train.set_epoch(epoch);
      while (std::optional<imgpack::Batch> batch = train.next()) {
        const float* images = host_images(*batch, buffer);
        for (std::size_t i = 0; i < batch->size() - batch->padding(); ++i) {
          const int32_t label = batch->labels()[i];
          if (label < 0) continue;
          double* sum = &sums[static_cast<std::size_t>(label) * dims];
          for (std::size_t d = 0; d < dims; ++d) sum[d] += images[i * dims + d];
          ++counts[static_cast<std::size_t>(label)];
        }
      }
    }
    for (std::size_t c = 0; c < classes; ++c) {
      for (std::size_t d = 0; d < dims && counts[c] > 0; ++d) sums[c * dims + d] /= counts[c];
    }

    // Validate: nearest mean by squared distance.
    std::size_t correct = 0, total = 0;
    imgpack::Loader val(dataset, options_for(args, imgpack::Role::val));
    val.set_epoch(0);
    while (std::optional<imgpack::Batch> batch = val.next()) {
      const float* images = host_images(*batch, buffer);
      for (std::size_t i = 0; i < batch->size() - batch->padding(); ++i) {
        if (batch->labels()[i] < 0) continue;
        std::size_t best = 0;
        double best_distance = -1;
        for (std::size_t c = 0; c < classes; ++c) {
          if (counts[c] == 0) continue;
          double distance = 0;
          for (std::size_t d = 0; d < dims; ++d) {
            const double diff = images[i * dims + d] - sums[c * dims + d];
            distance += diff * diff;
          }
          if (best_distance < 0 || distance < best_distance) {
            best_distance = distance;
            best = c;
          }
        }
        correct += best == static_cast<std::size_t>(batch->labels()[i]) ? 1 : 0;
        ++total;
      }
    }
    const double accuracy = total > 0 ? static_cast<double>(correct) / total : 0;
    std::size_t trained = 0;
    for (std::size_t c : counts) trained += c;
    std::printf(
        "trained on %zu images (%u epochs), validated on %zu: accuracy %.3f (chance %.3f)\n",
        trained, args.epochs, total, accuracy, classes > 0 ? 1.0 / classes : 0.0);
    return accuracy >= args.min_accuracy ? 0 : 1;
  } catch (const imgpack::UsageError& e) {
    std::fprintf(stderr, "nearest_class_mean: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nearest_class_mean: %s\n", e.what());
    return 1;
  }
}
