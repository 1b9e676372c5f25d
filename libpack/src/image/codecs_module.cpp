// libimgpack_codecs.so: OpenCV's imgcodecs behind the C entry point that
// codecs.cpp loads (codecs.hpp). It links OpenCV's core and imgcodecs and
// nothing of imgpack; it exports only its entry point.
#include <exception>
#include <new>
#include <string>

#include <opencv2/imgcodecs.hpp>

#include "codecs.hpp"

namespace imgpack::codecs {
namespace {

bool decode_bytes(const uint8_t* data, std::size_t size, int flags, cv::Mat* image,
                  std::string* error) {
  try {
    // imdecode reads the buffer and never writes it.
    const cv::Mat buffer(1, static_cast<int>(size), CV_8UC1, const_cast<uint8_t*>(data));
    *image = cv::imdecode(buffer, flags);
    return true;
  } catch (const cv::Exception& e) {
    *error = e.code == cv::Error::StsNoMem ? std::string(kOutOfMemory) : e.what();
  } catch (const std::bad_alloc&) {
    *error = kOutOfMemory;
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown exception";
  }
  return false;
}

bool encode_image(const char* extension, const cv::Mat* image, const int* params,
                  std::size_t param_count, std::vector<uint8_t>* encoded, bool* encoded_ok,
                  std::string* error) {
  try {
    *encoded_ok =
        cv::imencode(extension, *image, *encoded, std::vector<int>(params, params + param_count));
    return true;
  } catch (const std::exception& e) {
    *error = e.what();
  } catch (...) {
    *error = "unknown exception";
  }
  return false;
}

constexpr ModuleFunctions kFunctions = {kCodecsModuleAbi, decode_bytes, encode_image};

}  // namespace
}  // namespace imgpack::codecs

extern "C" __attribute__((visibility("default"))) const imgpack::codecs::ModuleFunctions*
imgpack_codecs_module_functions() {
  return &imgpack::codecs::kFunctions;
}
