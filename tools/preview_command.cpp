// imgpack preview DATASET --out FILE.png: a contact sheet of records and variants.
#include <memory>

#include "cli_common.hpp"
#include "imgpack/preview.hpp"

namespace imgpack::cli {

namespace {

struct PreviewArgs {
  std::string dataset, out;
  PreviewOptions options;
  bool json = false;
  bool quiet = false;
};

int run_preview(const PreviewArgs& args) {
  PreviewSheet sheet = render_preview(args.dataset, args.options);
  write_png(args.out, sheet.image);
  if (args.json) {
    nlohmann::ordered_json j;
    j["out"] = args.out;
    j["width"] = sheet.image.cols;
    j["height"] = sheet.image.rows;
    j["rows"] = sheet.layout.rows;
    j["columns"] = sheet.layout.columns;
    j["samples"] = sheet.samples;
    j["variants"] = sheet.variants;
    print_json(j);
  } else if (!args.quiet) {
    std::fprintf(stderr, "%s: %zu sample%s x %u variant%s, %dx%d pixels\n", args.out.c_str(),
                 sheet.samples.size(), sheet.samples.size() == 1 ? "" : "s", sheet.variants,
                 sheet.variants == 1 ? "" : "s", sheet.image.cols, sheet.image.rows);
  }
  return kExitOk;
}

}  // namespace

void add_preview_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<PreviewArgs>();
  CLI::App* cmd = app.add_subcommand(
      "preview", "Write a PNG contact sheet: one row per sample with its variants across");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")->required();
  cmd->add_option("--out,-o", args->out, "PNG file to write")->required();
  cmd->add_option("--samples", args->options.samples, "Samples to show")->capture_default_str();
  cmd->add_option("--class", args->options.class_name, "Only samples of this class");
  cmd->add_option("--seed", args->options.seed, "Seed for choosing the samples")
      ->capture_default_str();
  cmd->add_option("--max-variants", args->options.max_variants, "Variant columns at most")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print a JSON summary on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No summary line on stderr");
  cmd->callback([args, &action] { action = [args] { return run_preview(*args); }; });
}

}  // namespace imgpack::cli
