// The names the reader's option enums are written and parsed as (loader.hpp,
// epoch_order.hpp, selection.hpp, output_format.hpp): one table each, and the
// public name/parse pair of every enum over it (enum_names.hpp).
#include <string_view>

#include "enum_names.hpp"
#include "imgpack/epoch_order.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/output_format.hpp"
#include "imgpack/selection.hpp"

namespace imgpack {

// (A constexpr table has internal linkage: each is used only by the pair after it.)

constexpr EnumNames kLastBatchNames{
    "last-batch policy",
    {EnumName{LastBatch::drop, "drop"}, EnumName{LastBatch::pad, "pad"},
     EnumName{LastBatch::partial, "partial"}}};
LastBatch parse_last_batch(std::string_view text) { return kLastBatchNames.parse(text); }
std::string_view last_batch_name(LastBatch last) { return kLastBatchNames.name(last); }

constexpr EnumNames kCropModeNames{
    "crop mode",
    {EnumName{CropMode::automatic, "auto"}, EnumName{CropMode::random, "random"},
     EnumName{CropMode::center, "center"}}};
CropMode parse_crop_mode(std::string_view text) { return kCropModeNames.parse(text); }
std::string_view crop_mode_name(CropMode mode) { return kCropModeNames.name(mode); }

constexpr EnumNames kReadPathNames{
    "read path",
    {EnumName{ReadPath::automatic, "auto"}, EnumName{ReadPath::mapped, "mapped"},
     EnumName{ReadPath::read, "read"}}};
ReadPath parse_read_path(std::string_view text) { return kReadPathNames.parse(text); }
std::string_view read_path_name(ReadPath path) { return kReadPathNames.name(path); }

constexpr EnumNames kDirectIoNames{"direct I/O setting",
                                   {EnumName{DirectIo::automatic, "auto"},
                                    EnumName{DirectIo::on, "on"}, EnumName{DirectIo::off, "off"}}};
DirectIo parse_direct_io(std::string_view text) { return kDirectIoNames.parse(text); }
std::string_view direct_io_name(DirectIo io) { return kDirectIoNames.name(io); }

constexpr EnumNames kOrderModeNames{
    "order",
    {EnumName{OrderMode::sequential, "sequential"}, EnumName{OrderMode::random, "random"},
     EnumName{OrderMode::shard_window, "shard-window"}}};
OrderMode parse_order_mode(std::string_view text) { return kOrderModeNames.parse(text); }
std::string_view order_mode_name(OrderMode mode) { return kOrderModeNames.name(mode); }

constexpr EnumNames kRankPolicyNames{
    "rank policy", {EnumName{RankPolicy::pad, "pad"}, EnumName{RankPolicy::drop, "drop"}}};
RankPolicy parse_rank_policy(std::string_view text) { return kRankPolicyNames.parse(text); }
std::string_view rank_policy_name(RankPolicy policy) { return kRankPolicyNames.name(policy); }

constexpr EnumNames kSamplingNames{
    "sampling",
    {EnumName{Sampling::uniform, "uniform"}, EnumName{Sampling::class_balanced, "class-balanced"},
     EnumName{Sampling::weighted, "weighted"}}};
Sampling parse_sampling(std::string_view text) { return kSamplingNames.parse(text); }
std::string_view sampling_name(Sampling sampling) { return kSamplingNames.name(sampling); }

constexpr EnumNames kOutputFormatNames{
    "output format",
    {EnumName{OutputFormat::uint8_nhwc, "uint8"}, EnumName{OutputFormat::float32_nchw, "float32"},
     EnumName{OutputFormat::float16_nchw, "float16"}}};
OutputFormat parse_output_format(std::string_view text) { return kOutputFormatNames.parse(text); }
std::string_view output_format_name(OutputFormat format) { return kOutputFormatNames.name(format); }

constexpr EnumNames kRoleNames{"role",
                               {EnumName{Role::train, "train"}, EnumName{Role::val, "val"},
                                EnumName{Role::test, "test"}, EnumName{Role::all, "all"}}};
Role parse_role(std::string_view text) { return kRoleNames.parse(text); }
std::string_view role_name(Role role) { return kRoleNames.name(role); }

constexpr EnumNames kVariantPolicyNames{
    "variant policy",
    {EnumName{VariantPolicy::automatic, "auto"}, EnumName{VariantPolicy::clean, "clean"},
     EnumName{VariantPolicy::rotate, "rotate"}, EnumName{VariantPolicy::all, "all"}}};
VariantPolicy parse_variant_policy(std::string_view text) {
  return kVariantPolicyNames.parse(text);
}
std::string_view variant_policy_name(VariantPolicy policy) {
  return kVariantPolicyNames.name(policy);
}

}  // namespace imgpack
