// imgpack sample-data OUT: generate a labeled, grouped image directory.
#include <memory>

#include "cli_common.hpp"
#include "cli_values.hpp"
#include "imgpack/convert.hpp"
#include "imgpack/sample_data.hpp"

namespace imgpack::cli {

namespace {

struct SampleDataArgs {
  std::string out;
  SampleDataOptions options;
  std::string size = "160x120";
  bool json = false;
  bool quiet = false;
};

int run_sample_data(SampleDataArgs& args) {
  auto [w, h] = parse_image_size(args.size, "--size", 16, 8192);  // write_sample_data()'s range
  args.options.width = w;
  args.options.height = h;
  SampleDataResult result = write_sample_data(args.out, args.options);
  if (args.json) {
    nlohmann::ordered_json j;
    j["images"] = result.images;
    j["masks"] = result.masks;
    j["labels"] = result.labels;
    j["bytes"] = result.bytes;
    j["classes"] = args.options.classes;
    j["groups"] = args.options.groups;
    j["out"] = args.out;
    print_json(j);
  } else if (!args.quiet) {
    std::fprintf(stderr, "%s: %llu images (%u classes, %u groups), %s\n", args.out.c_str(),
                 static_cast<unsigned long long>(result.images), args.options.classes,
                 args.options.groups, human_bytes(result.bytes).c_str());
  }
  return kExitOk;
}

}  // namespace

void add_sample_data_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SampleDataArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sample-data", "Generate a labeled, grouped directory of JPEG and PNG images for demos");
  cmd->add_option("OUT", args->out, "Directory to write")->required()->check(not_empty());
  cmd->add_option("--classes", args->options.classes, "Number of classes")->capture_default_str();
  cmd->add_option("--groups", args->options.groups, "Number of groups (backgrounds)")
      ->capture_default_str();
  cmd->add_option("--per-class", args->options.per_class, "Images per class")
      ->capture_default_str();
  cmd->add_option("--size", args->size, "Typical image size WxH (each varies by +-25%)")
      ->capture_default_str()
      ->check(not_empty());
  cmd->add_option("--seed", args->options.seed, "Seed")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_flag("--masks", args->options.masks,
                "Also write each image's label map (shape = class id + 1, background 0) to "
                "OUT/masks/<class>/, and the label names to OUT/masks/classes.txt");
  cmd->add_flag("--boxes", args->options.boxes,
                "Also write each image's YOLO label beside it (the shape's exact box and two "
                "keypoints, left and right) and the class names to OUT/classes.txt: convert with "
                "--size N --yolo --yolo-keypoints left,right");
  cmd->add_flag("--json", args->json, "Print a JSON summary on stdout");
  cmd->add_flag("--quiet,-q", args->quiet, "No summary line");
  cmd->callback([args, &action] { action = [args] { return run_sample_data(*args); }; });
}

}  // namespace imgpack::cli
