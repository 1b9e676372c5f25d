#include "conversion/conversion_report.hpp"

#include <nlohmann/json.hpp>

#include "files.hpp"
#include "imgpack/format.hpp"

namespace imgpack {

using json = nlohmann::ordered_json;

void write_report(const ConvertOptions& options, const ConversionPlan& plan,
                  const std::string& created_by, const ConvertResult& result,
                  const ConversionTimings& timings, const std::string& failure) {
  auto worded = [&options](const std::string& text) {
    return options.report_wording ? options.report_wording(text) : text;
  };
  json report;
  if (!failure.empty()) report["failed"] = worded(failure);
  report["imgpack_format"] = format::kIndexVersion;
  report["created_by"] = created_by;
  report["dataset_uuid"] = plan.uuid;
  report["source"] = options.src.string();
  report["records"] = result.records;
  report["samples"] = result.samples;
  report["shards"] = result.shards;
  report["ignored_files"] = result.ignored_files;
  json skipped = json::array();
  for (const SkippedInput& s : result.skipped) {
    skipped.push_back({{"path", s.path}, {"reason", worded(s.reason)}});
  }
  report["skipped"] = std::move(skipped);
  if (plan.list.boxes) {
    json left_out = json::array();
    for (const SkippedInput& s : result.objects_left_out) {
      left_out.push_back({{"path", s.path}, {"reason", worded(s.reason)}});
    }
    report["objects_left_out"] = std::move(left_out);
  }
  if (!result.input_warnings.empty()) {
    json warnings = json::array();
    for (const std::string& warning : result.input_warnings) warnings.push_back(worded(warning));
    report["warnings"] = std::move(warnings);
  }
  report["max_skipped"] = options.max_skipped.text();
  if (options.resume) {
    json notes = json::array();
    for (const std::string& note : result.resume_notes) notes.push_back(worded(note));
    report["resumed"] = {{"shards_kept", result.resumed_shards},
                         {"inputs_kept", result.resumed_inputs},
                         {"notes", std::move(notes)}};
  }
  report["threads"] = timings.threads;
  report["timings"] = {
      {"plan_s", timings.plan_s}, {"convert_s", timings.convert_s}, {"total_s", timings.total_s}};
  report["images_per_s"] = timings.convert_s > 0
                               ? static_cast<double>(timings.converted_inputs) / timings.convert_s
                               : 0.0;
  report["options"] = json::parse(plan.options_json);
  write_file_atomic(options.out / format::kReportFile,
                    report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace imgpack
