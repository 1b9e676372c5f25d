// A training program that uses CUDA itself, on the imgpack reader: it streams
// the val role of one fold to a GPU as normalized float32 NCHW, orders its own
// stream after each upload, copies every batch back on that stream and checks
// it against the same batch delivered to the host. Device batches that differ
// from host ones by more than float rounding, or arrive out of order, fail it.
//
//   cuda_batches DATASET --split NAME [--fold F] [--device cuda:N]
//
// Prints where the reader loaded its CUDA module from. Exits 0 when every
// batch matches, or when there is no CUDA device (it says so: nothing to
// compare), 1 otherwise.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <imgpack/dataset.hpp>
#include <imgpack/error.hpp>
#include <imgpack/loader.hpp>
#include <string>
#include <vector>

namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw imgpack::Error(std::string(call) + ": " + cudaGetErrorString(status));
  }
}

imgpack::LoaderOptions options_for(const std::string& split, int fold, imgpack::Device device) {
  imgpack::LoaderOptions o;
  o.selection.split = split;
  o.selection.fold = fold;
  o.selection.role = imgpack::Role::val;
  o.batch_size = 16;
  o.device = device;
  o.output = imgpack::OutputFormat::float32_nchw;
  o.mean = {0.485f, 0.456f, 0.406f, 0};
  o.stddev = {0.229f, 0.224f, 0.225f, 1};
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string dataset_dir, split, device_name = "cuda:0";
    int fold = 0;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--split" && i + 1 < argc) {
        split = argv[++i];
      } else if (arg == "--fold" && i + 1 < argc) {
        fold = std::stoi(argv[++i]);
      } else if (arg == "--device" && i + 1 < argc) {
        device_name = argv[++i];
      } else if (dataset_dir.empty()) {
        dataset_dir = arg;
      } else {
        throw imgpack::UsageError("unknown argument " + arg);
      }
    }
    if (dataset_dir.empty() || split.empty()) {
      throw imgpack::UsageError("usage: cuda_batches DATASET --split NAME [--fold F]");
    }
    const std::string module = imgpack::cuda_module_path();
    std::printf("CUDA module: %s\n", module.empty() ? "(none)" : module.c_str());
    const imgpack::Device device = imgpack::parse_device(device_name);
    if (imgpack::cuda_device_count() <= device.index) {
      std::printf("no CUDA device %s: nothing to compare\n", device.name().c_str());
      return 0;
    }

    const imgpack::Dataset dataset = imgpack::Dataset::open(dataset_dir);
    imgpack::Loader on_device(dataset, options_for(split, fold, device));
    imgpack::Loader on_host(dataset, options_for(split, fold, imgpack::Device::host()));
    on_device.set_epoch(0);
    on_host.set_epoch(0);
    check(cudaSetDevice(device.index), "cudaSetDevice");
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    std::vector<float> copy;
    std::size_t batches = 0, mismatches = 0;
    while (std::optional<imgpack::Batch> d = on_device.next()) {
      std::optional<imgpack::Batch> h = on_host.next();
      if (!h || h->size() != d->size()) throw imgpack::Error("device and host batches differ");
      copy.resize(d->bytes() / sizeof(float));
      d->wait_on_stream(stream);  // the copy below reads the batch after its upload
      check(cudaMemcpyAsync(copy.data(), d->data(), d->bytes(), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync");
      d->recycle_after(stream);
      check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      const float* expected = h->data_as<float>();
      for (std::size_t i = 0; i < copy.size(); ++i) {
        if (std::fabs(copy[i] - expected[i]) > 1e-5f) ++mismatches;
      }
      ++batches;
    }
    cudaStreamDestroy(stream);
    std::printf("%zu device batches on %s, %zu values differ from the host's\n", batches,
                device.name().c_str(), mismatches);
    return batches > 0 && mismatches == 0 ? 0 : 1;
  } catch (const imgpack::UsageError& e) {
    std::fprintf(stderr, "cuda_batches: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_batches: %s\n", e.what());
    return 1;
  }
}
