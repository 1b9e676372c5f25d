// imgpack preview DATASET --out FILE.png: a contact sheet of records and
// variants, or with --crop/--flip of the reader's online crops over epochs.
#include <memory>

#include "cli_common.hpp"
#include "cli_values.hpp"
#include "imgpack/dataset.hpp"
#include "imgpack/error.hpp"
#include "imgpack/loader.hpp"
#include "imgpack/preview.hpp"

namespace imgpack::cli {

namespace {

struct PreviewArgs {
  std::string dataset, out;
  PreviewOptions options;
  std::string crop;  // "224" or "WxH"; empty: whole records
  std::string crop_mode = "random";
  double hflip = 0;
  double vflip = 0;
  uint32_t epochs = 4;
  bool json = false;
  bool quiet = false;
};

// With --crop or a flip: each sample's record as a Loader with these crop
// options delivers it in epochs 0..--epochs-1 (seeded by --seed, as
// OrderOptions::seed seeds the loader's).
void add_crop_views(const PreviewArgs& args, PreviewOptions& options) {
  if (args.crop.empty() && args.hflip == 0 && args.vflip == 0) return;
  if (args.epochs == 0) throw UsageError("--epochs must be at least 1");
  auto dataset = std::make_shared<Dataset>(Dataset::open(args.dataset));
  auto loader = std::make_shared<LoaderOptions>();
  if (!args.crop.empty()) {
    const auto [width, height] = parse_image_size(args.crop, "--crop");
    loader->crop.width = width;
    loader->crop.height = height;
  }
  loader->crop.mode = parse_crop_mode(args.crop_mode);
  loader->crop.hflip = args.hflip;
  loader->crop.vflip = args.vflip;
  loader->order.seed = args.options.seed;
  // Refuses a crop the Loader would refuse, before any record is read.
  std::vector<uint8_t> stored(dataset->record_bytes()), view(dataset->record_bytes());
  copy_delivered_view(*dataset, *loader, 0, 0, 0, stored.data(), view.data());
  options.views = args.epochs;
  options.view_height = loader->crop.height != 0 ? loader->crop.height : dataset->height();
  options.view_width = loader->crop.width != 0 ? loader->crop.width : dataset->width();
  options.view = [dataset, loader](const uint8_t* record, int64_t sample, uint32_t epoch,
                                   uint8_t* out) {
    copy_delivered_view(*dataset, *loader, epoch, sample, 0, record, out);
  };
  options.mask_view = [dataset, loader](const uint8_t* mask, int64_t sample, uint32_t epoch,
                                        uint8_t* out) {
    copy_delivered_mask(*dataset, *loader, epoch, sample, 0, mask, out);
  };
}

int run_preview(const PreviewArgs& args) {
  refuse_dataset_file_as_output(args.out, args.dataset, "--out");
  PreviewOptions options = args.options;
  add_crop_views(args, options);
  PreviewSheet sheet = render_preview(args.dataset, options);
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
    j["epochs"] = sheet.views;
    j["masks"] = sheet.masks;
    print_json(j);
  } else if (!args.quiet) {
    const uint32_t columns = sheet.views > 0 ? sheet.views : sheet.variants;
    std::fprintf(stderr, "%s: %zu sample%s x %u %s%s, %dx%d pixels\n", args.out.c_str(),
                 sheet.samples.size(), sheet.samples.size() == 1 ? "" : "s", columns,
                 sheet.views > 0 ? "epoch" : "variant", columns == 1 ? "" : "s", sheet.image.cols,
                 sheet.image.rows);
  }
  return kExitOk;
}

}  // namespace

void add_preview_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<PreviewArgs>();
  CLI::App* cmd = app.add_subcommand(
      "preview", "Write a PNG contact sheet: one row per sample with its variants across");
  cmd->add_option("DATASET", args->dataset, "Dataset directory")
      ->required()
      ->check(dataset_directory());
  cmd->add_option("--out,-o", args->out, "PNG file to write")->required()->check(not_empty());
  cmd->add_option("--samples", args->options.samples, "Samples to show")->capture_default_str();
  cmd->add_option("--class", args->options.class_name, "Only samples of this class");
  cmd->add_option("--seed", args->options.seed, "Seed for choosing the samples")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--max-variants", args->options.max_variants, "Variant columns at most")
      ->capture_default_str();
  cmd->add_option("--crop", args->crop,
                  "Show the reader's online crop N or WxH of each sample over --epochs epochs "
                  "(variant 0), as a Loader with the same options and seed delivers it");
  cmd->add_option("--crop-mode", args->crop_mode, "random or center")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "center"}));
  cmd->add_option("--hflip,--flip", args->hflip,
                  "Probability of mirroring left-right (shows epochs like --crop)")
      ->capture_default_str();
  cmd->add_option("--vflip", args->vflip, "Probability of mirroring top-bottom")
      ->capture_default_str();
  cmd->add_option("--epochs", args->epochs, "Epoch columns with --crop or a flip")
      ->capture_default_str();
  cmd->add_flag(
      "--no-masks", [args](std::int64_t) { args->options.overlay_masks = false; },
      "Do not draw a dataset's masks over its records (drawn half transparent, a "
      "colour per label, label 0 clear)");
  cmd->add_flag("--json", args->json, "Print a JSON summary on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No summary line on stderr");
  cmd->callback([args, &action] { action = [args] { return run_preview(*args); }; });
}

}  // namespace imgpack::cli
