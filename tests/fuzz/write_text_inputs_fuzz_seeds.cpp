// Writes the seed corpus of text_inputs_fuzzer into OUT_DIR: valid texts of
// each reader (a quoted CSV with a BOM and CRLF; COCO files with keypoints,
// crowd boxes and polygons, matched by path and by bare name; YOLO boxes and
// pose lines; flip maps by name and index; mask colour tables; imported
// splits; a conversion's journal, whole and with its last line torn), each
// behind its selector byte.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "conversion/convert_journal.hpp"
#include "fuzz_seeds.hpp"

namespace fs = std::filesystem;

namespace {

// A journal as a conversion writes it: its header, then a line per
// committed shard (`torn`: the last one cut short, as a crash leaves it).
std::string journal_text(bool torn) {
  const fs::path dir = fs::temp_directory_path() / "imgpack-text-inputs-seeds";
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    imgpack::ConvertJournal journal = imgpack::ConvertJournal::create(dir, "5e7a-uuid", 40);
    journal.append({0, "shard-00000.h5", 16, 17, {{3, "corrupt JPEG"}}, 0x1234});
    journal.append({1, "shard-00001.h5", 16, 33, {}, std::nullopt});
  }
  std::ifstream in(dir / imgpack::kJournalFile, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove_all(dir);
  if (text.empty()) throw std::runtime_error("no journal written");
  if (torn) text.resize(text.size() - 7);
  return text;
}

const std::vector<std::pair<char, std::string>>& seeds_of_each_reader() {
  static const std::vector<std::pair<char, std::string>> all = {
      {0, "path,label,group\nc0/a.jpg,cat,p1\nc1/b.jpg,dog,p2\n"},
      {0, "\xEF\xBB\xBFpath,\"label, quoted\"\r\n\"c0/a \"\"1\"\".jpg\",\"multi\nline\"\r\n\r\n"},
      {0, "img,classname,subject\n img_1.jpg , c0 ,p002\nimg_2.jpg,c1,\n"},
      {1, R"({"categories": [{"id": 7, "name": "dog"}, {"id": 3, "name": "cat"}],
 "images": [{"id": 1, "file_name": "a/x.jpg", "width": 640, "height": 480},
            {"id": 2, "file_name": "y.jpg", "width": 100, "height": 50}],
 "annotations": [
  {"id": 10, "image_id": 1, "category_id": 7, "bbox": [64, 48, 128, 96], "iscrowd": 0},
  {"id": 11, "image_id": 2, "category_id": 3, "bbox": [0, 0, 320, 240], "iscrowd": 1}]})"},
      {1, R"({"categories": [
  {"id": 5, "name": "person", "keypoints": ["nose", "left_eye", "right_eye"],
   "skeleton": [[1, 2]]}, {"id": 1, "name": "ball"}],
 "images": [{"id": 9, "file_name": "a/x.jpg", "width": 200, "height": 100},
            {"id": 4, "file_name": "b/missing.jpg", "width": 10, "height": 10}],
 "annotations": [
  {"image_id": 9, "category_id": 5, "segmentation": [[1, 2, 3, 4, 5, 6]],
   "bbox": [20, 10, 100, 50], "keypoints": [100, 50, 2, 40, 20, 1, 0, 0, 0]},
  {"image_id": 9, "category_id": 1, "segmentation": {"counts": [1, 2], "size": [100, 200]},
   "bbox": [0, 0, 10, 10]}]})"},
      {2, "0 0.5 0.5 0.2 0.3\n1 0.1 0.9 0.05 0.1\n"},
      {2, "0 0.5 0.5 0.4 0.4 0.5 0.4 2 0.45 0.35 1 0.55 0.35 0\r\n\r\n"},
      {2, "3 1.0005 -0.0005 0.1 0.1\n"},
      {3, "left_eye:right_eye,LeftHand:RightHand"},
      {3, "1:2, 3 : 4"},
      {4, "r,g,b,label,name\n0,0,0,0,background\n255,0,0,1,road\n0,0,255,2,sky\n"},
      {4, "label,b,g,r\r\n7,1,2,3\r\n"},
      {5, "path,fold\nc0/s0.jpg,0\nc1/s1.jpg,1\nc2/s2.jpg,-1\nc0/s3.jpg,1\nc1/s4.jpg,0\n"},
      {5, "fold,path,extra\n2,c0/s0.jpg,x\n1,c1/s1.jpg,\n0,c2/s2.jpg,y\n"},
      {6, journal_text(false)},
      {6, journal_text(true)},
  };
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  return imgpack::fuzz::seeds_main(argc, argv, "write_text_inputs_fuzz_seeds", [](auto& seeds) {
    for (const auto& [reader, text] : seeds_of_each_reader()) seeds.write(reader, text);
  });
}
