// OpenCV's image codecs (imgcodecs), reached through a module of their own,
// libimgpack_codecs.so, loaded with dlopen the first time an image is decoded
// or encoded through OpenCV. imgcodecs brings about 130 libraries with it
// (GDAL and what GDAL links); a command that touches no image (inspect,
// verify, split, merge, upgrade, bench) never loads them and starts in a few
// milliseconds. JPEGs are decoded by TurboJPEG, PNG images and masks by
// libpng, without the module; it reads the other formats and writes the PNGs
// and JPEGs of preview and sample-data.
//
// The module is searched for as loadable_module::candidates() says:
// $IMGPACK_CODECS_MODULE alone when set; otherwise beside the program (or the
// shared object holding this code), the dynamic linker's search (the installed
// package puts its library directory on the run path of programs that link
// imgpack::pack), the build tree and the install prefix. It is accepted only
// when built from the same sources as this code (kCodecsModuleAbi).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <opencv2/core/mat.hpp>

#include "codecs_module_abi.hpp"  // generated: IMGPACK_CODECS_MODULE_ABI
#include "imgpack/error.hpp"

namespace imgpack::codecs {

// OpenCV threw while decoding or encoding (its message follows).
class CodecError : public Error {
 public:
  using Error::Error;
};

// As cv::imdecode(bytes, flags): an empty Mat when OpenCV cannot read the
// bytes. Throws std::bad_alloc when memory ran out, CodecError when OpenCV
// throws otherwise, and imgpack::Error (not a
// CodecError: no image can be read at all) when the module cannot be loaded,
// naming where it was looked for. Thread-safe.
cv::Mat decode(std::span<const uint8_t> bytes, int flags);

// As cv::imencode(extension, image, encoded, params): false when OpenCV
// cannot encode `image` as `extension`. Throws as decode().
bool encode(const char* extension, const cv::Mat& image, std::vector<uint8_t>& encoded,
            const std::vector<int>& params = {});

// --- the boundary between this code and the module ---------------------------

inline constexpr const char* kCodecsModuleAbi = IMGPACK_CODECS_MODULE_ABI;
inline constexpr const char* kEntryPoint = "imgpack_codecs_module_functions";
inline constexpr const char* kFileName = "libimgpack_codecs.so";
// The environment variable naming the module to load instead of searching.
inline constexpr const char* kPathVariable = "IMGPACK_CODECS_MODULE";

// What the module provides. Every function may be called from any thread and
// never throws: an OpenCV exception becomes `false` with its message in
// *error, or kOutOfMemory exactly where memory ran out.
inline constexpr std::string_view kOutOfMemory = "out of memory";
struct ModuleFunctions {
  const char* abi;
  bool (*decode)(const uint8_t* data, std::size_t size, int flags, cv::Mat* image,
                 std::string* error);
  // *encoded_ok: what cv::imencode returned.
  bool (*encode)(const char* extension, const cv::Mat* image, const int* params,
                 std::size_t param_count, std::vector<uint8_t>* encoded, bool* encoded_ok,
                 std::string* error);
};
// loadable_module reads `abi` through a pointer to the table.
static_assert(std::is_standard_layout_v<ModuleFunctions>);

}  // namespace imgpack::codecs
