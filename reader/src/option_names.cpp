// The names the reader's option enums are written and parsed as (loader.hpp,
// epoch_order.hpp, selection.hpp, output_format.hpp): one table each and the
// public name/parse pair over it (IMGPACK_ENUM_NAMES, enum_names.hpp).
#include <string_view>

#include "enum_names.hpp"
#include "imgpack/epoch_order.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/output_format.hpp"
#include "imgpack/selection.hpp"

namespace imgpack {

IMGPACK_ENUM_NAMES(LastBatch, last_batch, "last-batch policy", {LastBatch::drop, "drop"},
                   {LastBatch::pad, "pad"}, {LastBatch::partial, "partial"})
IMGPACK_ENUM_NAMES(CropMode, crop_mode, "crop mode", {CropMode::automatic, "auto"},
                   {CropMode::random, "random"}, {CropMode::center, "center"})
IMGPACK_ENUM_NAMES(ReadPath, read_path, "read path", {ReadPath::automatic, "auto"},
                   {ReadPath::mapped, "mapped"}, {ReadPath::read, "read"})
IMGPACK_ENUM_NAMES(DirectIo, direct_io, "direct I/O setting", {DirectIo::automatic, "auto"},
                   {DirectIo::on, "on"}, {DirectIo::off, "off"})
IMGPACK_ENUM_NAMES(DirectUpload, direct_upload, "direct upload setting",
                   {DirectUpload::automatic, "auto"}, {DirectUpload::on, "on"},
                   {DirectUpload::off, "off"})
IMGPACK_ENUM_NAMES(OrderMode, order_mode, "order", {OrderMode::sequential, "sequential"},
                   {OrderMode::random, "random"}, {OrderMode::shard_window, "shard-window"})
IMGPACK_ENUM_NAMES(RankPolicy, rank_policy, "rank policy", {RankPolicy::pad, "pad"},
                   {RankPolicy::drop, "drop"})
IMGPACK_ENUM_NAMES(Sampling, sampling, "sampling", {Sampling::uniform, "uniform"},
                   {Sampling::class_balanced, "class-balanced"}, {Sampling::weighted, "weighted"})
IMGPACK_ENUM_NAMES(OutputFormat, output_format, "output format",
                   {OutputFormat::uint8_nhwc, "uint8"}, {OutputFormat::float32_nchw, "float32"},
                   {OutputFormat::float16_nchw, "float16"})
IMGPACK_ENUM_NAMES(Role, role, "role", {Role::train, "train"}, {Role::val, "val"},
                   {Role::test, "test"}, {Role::all, "all"})
IMGPACK_ENUM_NAMES(VariantPolicy, variant_policy, "variant policy",
                   {VariantPolicy::automatic, "auto"}, {VariantPolicy::clean, "clean"},
                   {VariantPolicy::rotate, "rotate"}, {VariantPolicy::all, "all"})

}  // namespace imgpack
