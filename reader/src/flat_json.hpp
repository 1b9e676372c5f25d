// A flat JSON object of string and integer members, written and read by hand
// (internal to the reader): the reader links HDF5 and threads only, and a
// LoaderState needs no more than this. Strings are UTF-8; the reader accepts
// every escape JSON has (\uXXXX with surrogate pairs included, as Python's
// json.dumps writes non-ASCII text), integers are decimal without fraction
// or exponent. Values of other kinds (floats, booleans, null, arrays,
// objects) are errors, not skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace imgpack::detail {

class FlatJsonWriter {
 public:
  void add_string(std::string_view key, std::string_view value);
  void add_unsigned(std::string_view key, uint64_t value);
  void add_signed(std::string_view key, int64_t value);
  // {"key":value,...} in the order the members were added.
  std::string text() const { return "{" + body_ + "}"; }

 private:
  void add_key(std::string_view key);
  std::string body_;
};

// A parsed object. Errors are imgpack::Error "WHAT: PROBLEM", WHAT naming the
// document (given to parse()) and PROBLEM the byte offset or the member.
class FlatJsonObject {
 public:
  // One object, nothing but white space after it; a member named twice is an error.
  static FlatJsonObject parse(std::string_view text, std::string_view what);

  bool has(std::string_view key) const { return members_.find(key) != members_.end(); }
  // The member's value; throws if it is missing or of another kind or range.
  const std::string& string_member(std::string_view key) const;
  uint64_t unsigned_member(std::string_view key) const;
  int64_t signed_member(std::string_view key) const;

 private:
  struct Value {
    bool is_string = false;
    std::string text;  // the decoded string, or the integer's characters
  };
  const Value& member(std::string_view key) const;

  std::string what_;
  std::map<std::string, Value, std::less<>> members_;
};

}  // namespace imgpack::detail
