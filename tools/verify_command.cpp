// imgpack verify DATASET: check the structure and every record's checksum.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "cli_common.hpp"
#include "cli_wording.hpp"
#include "imgpack/merge.hpp"
#include "imgpack/verify.hpp"
#include "progress.hpp"

namespace imgpack::cli {

namespace {

struct VerifyArgs {
  std::string dataset;
  unsigned threads = 0;
  bool json = false;
  bool quiet = false;
};

// Bad records listed one per line before "... and N more".
constexpr std::size_t kListedBadRecords = 50;

std::string bad_record_text(const std::string& dataset, const BadRecord& b) {
  return (std::filesystem::path(dataset) / b.shard_file).string() + ": " +
         (b.mask ? "the mask of " : "") + "row " + std::to_string(b.row) + " (record " +
         std::to_string(b.record) + ", sample " + std::to_string(b.sample) + " '" + b.sample_path +
         "', variant " + std::to_string(b.variant) + ") does not match its stored checksum";
}

double gb_per_s(const VerifyReport& report) {
  return report.seconds > 0 ? static_cast<double>(report.bytes_checked) / report.seconds / 1e9 : 0;
}

nlohmann::ordered_json bad_record_json(const BadRecord& b) {
  return {{"shard", b.shard},      {"file", b.shard_file}, {"row", b.row},
          {"sample", b.sample},    {"record", b.record},   {"variant", b.variant},
          {"path", b.sample_path}, {"mask", b.mask}};
}

// The report, its bad records left for print_report_json() ("bad_records": []).
nlohmann::ordered_json report_json(const VerifyReport& report) {
  nlohmann::ordered_json j;
  j["ok"] = report.ok();
  j["records"] = report.records;
  j["records_checked"] = report.records_checked;
  j["masks"] = report.masks;
  j["bad_records"] = nlohmann::ordered_json::array();
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  for (const std::string& error : report.errors) errors.push_back(cli_wording(error));
  j["errors"] = std::move(errors);
  j["bad_shards"] = report.bad_shards;
  j["shards"] = report.shards;
  j["bytes"] = report.bytes_checked;
  j["seconds"] = report.seconds;
  j["gb_per_s"] = gb_per_s(report);
  j["structure_seconds"] = report.structure_seconds;
  j["checksum_seconds"] = report.checksum_seconds;
  j["checksum_gb_per_s"] = report.checksum_seconds > 0 ? static_cast<double>(report.bytes_checked) /
                                                             report.checksum_seconds / 1e9
                                                       : 0.0;
  j["threads"] = report.threads;
  return j;
}

// Prints the report as print_json() prints one JSON value, the bad records
// one at a time: a dataset damaged throughout has millions, which held as
// one JSON value would take about a kilobyte each.
void print_report_json(const VerifyReport& report) {
  constexpr auto kReplace = nlohmann::ordered_json::error_handler_t::replace;
  const std::string whole = report_json(report).dump(2, ' ', false, kReplace);
  // No string can hold it: a newline in one is written as "\n".
  const std::string empty = "\n  \"bad_records\": []";
  const std::size_t at = whole.find(empty);
  if (report.bad_records.empty() || at == std::string::npos) {
    std::cout << whole << std::endl;
    return;
  }
  std::cout << std::string_view(whole).substr(0, at) << "\n  \"bad_records\": [";
  std::string record;
  for (std::size_t i = 0; i < report.bad_records.size(); ++i) {
    record = bad_record_json(report.bad_records[i]).dump(2, ' ', false, kReplace);
    std::cout << (i == 0 ? "\n    " : ",\n    ");
    // Each line four spaces in, as the record's place in the whole puts it.
    std::size_t line = 0;
    for (std::size_t end; (end = record.find('\n', line)) != std::string::npos; line = end + 1) {
      std::cout << std::string_view(record).substr(line, end + 1 - line) << "    ";
    }
    std::cout << std::string_view(record).substr(line);
  }
  std::cout << "\n  ]" << std::string_view(whole).substr(at + empty.size()) << std::endl;
}

int run_verify(const VerifyArgs& args) {
  VerifyOptions options;
  options.threads = args.threads;
  Progress progress("verify", args.quiet || args.json);
  options.progress = [&](const VerifyProgress& p) {
    progress.update(p.records_done, p.records_total, 0);
  };
  VerifyReport report = verify_dataset(args.dataset, options);
  if (report.ok()) {
    // A part's shards against the part it is: one copied from another part
    // agrees with this part's index in all verify_dataset() checks.
    std::string foreign = check_part_shards(args.dataset);
    if (!foreign.empty()) report.errors.push_back(std::move(foreign));
  }
  // A dataset whose files could not be read checked no record: no bar then.
  if (report.records_checked > 0 || report.errors.empty()) {
    progress.finish(report.records_checked, report.records_checked, 0);
  }

  // Problems go to stderr, one line each, naming the file.
  for (const std::string& error : report.errors) {
    std::cerr << "imgpack verify: " << error_text(error) << "\n";
  }
  for (std::size_t i = 0; i < report.bad_records.size() && i < kListedBadRecords; ++i) {
    std::cerr << "imgpack verify: " << bad_record_text(args.dataset, report.bad_records[i]) << "\n";
  }
  if (report.bad_records.size() > kListedBadRecords) {
    std::cerr << "imgpack verify: ... and " << report.bad_records.size() - kListedBadRecords
              << " more bad records (--json lists all)\n";
  }

  if (args.json) {
    print_report_json(report);
  } else if (!args.quiet) {
    char rate[96];
    std::snprintf(rate, sizeof rate, "%s in %.2f s, %.2f GB/s, %u thread%s",
                  human_bytes(report.bytes_checked).c_str(), report.seconds, gb_per_s(report),
                  report.threads, report.threads == 1 ? "" : "s");
    if (report.ok()) {
      std::cout << args.dataset << ": ok: " << report.records_checked << " records"
                << (report.masks ? " and their masks" : "") << " in " << report.shards << " shard"
                << (report.shards == 1 ? "" : "s") << " match their checksums (" << rate << ")\n";
    } else {
      std::cout << args.dataset << ": DAMAGED: " << report.errors.size() << " error"
                << (report.errors.size() == 1 ? "" : "s") << ", " << report.bad_records.size()
                << " bad record" << (report.bad_records.size() == 1 ? "" : "s") << " in "
                << report.bad_shards.size() << " of " << report.shards << " shards; "
                << report.records_checked << " of " << report.records << " records checked ("
                << rate << ")\n";
    }
  }
  return report.ok() ? kExitOk : kExitFailure;
}

}  // namespace

void add_verify_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "Check a dataset's structure and every record's checksum; exit 1 if damaged");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_option("--threads", args->threads, "Threads reading and hashing (0 = one per core)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object on stdout");
  cmd->add_flag("--quiet,-q", args->quiet,
                "No progress and no summary line (problems still go to stderr)");
  cmd->callback([args, &action] { action = [args] { return run_verify(*args); }; });
}

}  // namespace imgpack::cli
