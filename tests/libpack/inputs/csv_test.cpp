#include "inputs/csv.hpp"

#include <gtest/gtest.h>

#include "imgpack/error.hpp"
#include "test_support.hpp"

namespace imgpack {
namespace {

using Fields = std::vector<std::string>;

std::string usage_error(const std::string& text) {
  try {
    parse_csv(text, "list.csv");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CsvTest, ReadsHeaderAndRows) {
  CsvTable t =
      parse_csv("subject,classname,img\np002,c0,img_44733.jpg\np002,c0,img_72999.jpg\n", "x.csv");
  EXPECT_EQ(t.header, (Fields{"subject", "classname", "img"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].fields, (Fields{"p002", "c0", "img_44733.jpg"}));
  EXPECT_EQ(t.rows[0].line, 2u);
  EXPECT_EQ(t.rows[1].line, 3u);
  EXPECT_EQ(t.column("img"), 2u);
  EXPECT_FALSE(t.column("image").has_value());
}

TEST(CsvTest, CrlfBomAndNoFinalNewline) {
  CsvTable t = parse_csv("\xEF\xBB\xBFpath,label\r\na.jpg,cat\r\nb.jpg,dog", "x.csv");
  EXPECT_EQ(t.header, (Fields{"path", "label"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].fields, (Fields{"a.jpg", "cat"}));
  EXPECT_EQ(t.rows[1].fields, (Fields{"b.jpg", "dog"}));
  EXPECT_EQ(t.rows[1].line, 3u);
  // Old Mac line ends.
  CsvTable mac = parse_csv("path\ra.jpg\rb.jpg\r", "x.csv");
  ASSERT_EQ(mac.rows.size(), 2u);
  EXPECT_EQ(mac.rows[1].line, 3u);
}

TEST(CsvTest, QuotedFieldsHoldCommasQuotesAndLineBreaks) {
  CsvTable t = parse_csv(
      "path,label\n"
      "\"dir, with comma/a.jpg\",\"say \"\"hi\"\"\"\n"
      "\"multi\r\nline.jpg\",  \"  kept  \"  \n"
      "plain.jpg,\"\"\n"
      "last.jpg,x\n",
      "x.csv");
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0].fields, (Fields{"dir, with comma/a.jpg", "say \"hi\""}));
  EXPECT_EQ(t.rows[1].fields, (Fields{"multi\r\nline.jpg", "  kept  "}));
  EXPECT_EQ(t.rows[1].line, 3u);
  EXPECT_EQ(t.rows[2].fields, (Fields{"plain.jpg", ""}));
  EXPECT_EQ(t.rows[2].line, 5u);  // the quoted line break counts
  EXPECT_EQ(t.rows[3].line, 6u);
}

TEST(CsvTest, UnquotedFieldsAreTrimmedAndBlankLinesSkipped) {
  CsvTable t = parse_csv("\n\n path , label \n\n a b.jpg ,\tcat\t\n\n\n", "x.csv");
  EXPECT_EQ(t.header, (Fields{"path", "label"}));
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].fields, (Fields{"a b.jpg", "cat"}));
  EXPECT_EQ(t.rows[0].line, 5u);
  // Empty trailing field.
  CsvTable trailing = parse_csv("a,b\nx,\n", "x.csv");
  EXPECT_EQ(trailing.rows[0].fields, (Fields{"x", ""}));
}

TEST(CsvTest, ErrorsNameTheFileAndLine) {
  EXPECT_EQ(usage_error(""), "list.csv: empty; a header row naming the columns is required");
  EXPECT_EQ(usage_error("\n\n"), "list.csv: empty; a header row naming the columns is required");
  EXPECT_EQ(usage_error("a,b\n1,2\n1,2,3\n"), "list.csv:3: 3 fields, but the header has 2");
  EXPECT_EQ(usage_error("a,b\n1\n"), "list.csv:2: 1 field, but the header has 2");
  EXPECT_EQ(usage_error("a,b,a\n"), "list.csv:1: the header names column 'a' twice");
  EXPECT_EQ(usage_error("a,b\n1,\"open\n\n"), "list.csv:2: quoted field is never closed");
  EXPECT_NE(usage_error("a,b\n\"x\"y,2\n").find("list.csv:2: unexpected 'y' after a closing quote"),
            std::string::npos);
  // A path read up to a NUL would open one file and store another name.
  EXPECT_EQ(usage_error(std::string("path,label\na.jpg,x\nb.jpg\0junk,y\n", 32)),
            "list.csv:3: a NUL byte; the file is not text (saved as UTF-16, or binary?)");
}

TEST(CsvTest, RequiredColumnsAreFoundOrNamedWithTheHeader) {
  CsvTable t = parse_csv("path,label\na.jpg,cat\n", "list.csv");
  EXPECT_EQ(t.require_column("label", "list.csv", "CsvInput::label"), 1u);
  try {
    (void)t.require_column("group", "list.csv", "CsvInput::group");
    FAIL() << "a missing column was accepted";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "list.csv:1: no column 'group' (CsvInput::group); the header has: path, label");
  }
}

TEST(CsvTest, ReadsFiles) {
  test::TempDir dir;
  test::write_bytes(dir / "l.csv", "path\na.jpg\n");
  CsvTable t = read_csv(dir / "l.csv");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_THROW(read_csv(dir / "missing.csv"), UsageError);
  EXPECT_THROW(read_csv(dir.path()), UsageError);
  try {
    read_csv(dir / "missing.csv");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.csv"), std::string::npos);
  }
}

}  // namespace
}  // namespace imgpack
