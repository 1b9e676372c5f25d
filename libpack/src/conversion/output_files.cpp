#include "conversion/output_files.hpp"

#include <string>

#include "conversion/convert_journal.hpp"
#include "imgpack/format.hpp"

namespace imgpack {

bool is_dataset_file_name(std::string_view name) {
  if (name.ends_with(format::kTmpSuffix)) {
    name.remove_suffix(std::string_view(format::kTmpSuffix).size());
    if (name.ends_with(kCompactSuffix)) {
      name.remove_suffix(std::string_view(kCompactSuffix).size());
      return format::is_shard_file_name(std::string(name));
    }
  }
  return name == format::kIndexFile || name == format::kSplitsFile || name == format::kReportFile ||
         name == kJournalFile || name == kMergeJournalFile ||
         format::is_shard_file_name(std::string(name));
}

}  // namespace imgpack
