#include "flat_json.hpp"

#include <charconv>
#include <cstdio>
#include <utility>

#include "imgpack/error.hpp"

namespace imgpack::detail {

namespace {

void append_escaped(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      out += escape;
    } else {
      out += c;
    }
  }
  out += '"';
}

void append_utf8(std::string& out, uint32_t code_point) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xc0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xe0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code_point & 0x3f));
  }
}

// A cursor over the text; every failure names the offset.
class Parser {
 public:
  Parser(std::string_view text, std::string_view what) : text_(text), what_(what) {}

  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(std::string(what_) + ": " + problem + " at byte " + std::to_string(at_));
  }

  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  bool done() const { return at_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[at_]; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }

  std::string string() {
    expect('"');
    std::string out;
    for (;;) {
      if (done()) fail("unterminated string");
      const char c = text_[at_];
      if (c == '"') {
        ++at_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
      ++at_;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (done()) fail("unterminated escape");
      const char escape = text_[at_];
      if (escape == 'u') {
        ++at_;
        append_utf8(out, code_point());
        continue;
      }
      const std::string_view from = "\"\\/bfnrt";
      const std::string_view to = "\"\\/\b\f\n\r\t";
      const std::size_t which = from.find(escape);
      if (which == std::string_view::npos) fail("unknown escape");
      out += to[which];
      ++at_;
    }
  }

  // The characters of an integer: -?[0-9]+, not followed by a fraction or exponent.
  std::string integer() {
    const std::size_t begin = at_;
    if (peek() == '-') ++at_;
    const std::size_t digits = at_;
    while (peek() >= '0' && peek() <= '9') ++at_;
    if (at_ == digits) fail("expected a string or an integer");
    if (peek() == '.' || peek() == 'e' || peek() == 'E') fail("only integers are accepted");
    return std::string(text_.substr(begin, at_ - begin));
  }

 private:
  uint32_t hex4() {
    if (text_.size() - at_ < 4) fail("truncated \\u escape");
    uint32_t value = 0;
    const char* first = text_.data() + at_;
    const auto [end, ec] = std::from_chars(first, first + 4, value, 16);
    if (ec != std::errc() || end != first + 4) fail("bad \\u escape");
    at_ += 4;
    return value;
  }

  // After "\u": one code point, a surrogate pair taken together.
  uint32_t code_point() {
    const uint32_t unit = hex4();
    if (unit >= 0xdc00 && unit <= 0xdfff) fail("lone low surrogate");
    if (unit < 0xd800 || unit > 0xdbff) return unit;
    if (text_.substr(at_, 2) != "\\u") fail("high surrogate without its low half");
    at_ += 2;
    const uint32_t low = hex4();
    if (low < 0xdc00 || low > 0xdfff) fail("high surrogate without its low half");
    return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
  }

  std::string_view text_;
  std::string_view what_;
  std::size_t at_ = 0;
};

}  // namespace

void FlatJsonWriter::add_key(std::string_view key) {
  if (!body_.empty()) body_ += ',';
  append_escaped(body_, key);
  body_ += ':';
}

void FlatJsonWriter::add_string(std::string_view key, std::string_view value) {
  add_key(key);
  append_escaped(body_, value);
}

void FlatJsonWriter::add_unsigned(std::string_view key, uint64_t value) {
  add_key(key);
  body_ += std::to_string(value);
}

void FlatJsonWriter::add_signed(std::string_view key, int64_t value) {
  add_key(key);
  body_ += std::to_string(value);
}

FlatJsonObject FlatJsonObject::parse(std::string_view text, std::string_view what) {
  FlatJsonObject object;
  object.what_ = what;
  Parser p(text, what);
  p.skip_space();
  p.expect('{');
  p.skip_space();
  if (p.peek() == '}') {
    p.expect('}');
  } else {
    for (;;) {
      p.skip_space();
      std::string key = p.string();
      p.skip_space();
      p.expect(':');
      p.skip_space();
      Value value;
      value.is_string = p.peek() == '"';
      value.text = value.is_string ? p.string() : p.integer();
      if (!object.members_.emplace(key, std::move(value)).second) {
        p.fail("member '" + key + "' appears twice");
      }
      p.skip_space();
      if (p.peek() == '}') {
        p.expect('}');
        break;
      }
      p.expect(',');
    }
  }
  p.skip_space();
  if (!p.done()) p.fail("text after the object");
  return object;
}

const FlatJsonObject::Value& FlatJsonObject::member(std::string_view key) const {
  const auto it = members_.find(key);
  if (it == members_.end()) throw Error(what_ + ": member '" + std::string(key) + "' is missing");
  return it->second;
}

const std::string& FlatJsonObject::string_member(std::string_view key) const {
  const Value& value = member(key);
  if (!value.is_string) throw Error(what_ + ": member '" + std::string(key) + "' is not a string");
  return value.text;
}

namespace {

template <class T>
T integer_value(const std::string& text, bool is_string, const std::string& what,
                std::string_view key, std::string_view kind) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (is_string || ec != std::errc() || stop != end) {
    throw Error(what + ": member '" + std::string(key) + "' is not " + std::string(kind) + " (" +
                (is_string ? "a string" : text) + ")");
  }
  return value;
}

}  // namespace

uint64_t FlatJsonObject::unsigned_member(std::string_view key) const {
  const Value& value = member(key);
  return integer_value<uint64_t>(value.text, value.is_string, what_, key,
                                 "an unsigned 64-bit integer");
}

int64_t FlatJsonObject::signed_member(std::string_view key) const {
  const Value& value = member(key);
  return integer_value<int64_t>(value.text, value.is_string, what_, key, "a 64-bit integer");
}

}  // namespace imgpack::detail
