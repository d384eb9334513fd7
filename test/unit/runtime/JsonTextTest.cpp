//===- JsonTextTest.cpp - JSON text in and out ------------------*- C++ -*-===//
//
// What runtime/core/JsonText.h adds to nlohmann-json: parse errors as
// "line L, column C: problem" at the start of the token that is wrong, keys
// repeated in an object and nesting past 512 refused, integers as int64,
// and floats written with the shortest %g digits (a float32 with those of
// the float, so a logged loss reads back bit for bit).
//
//===----------------------------------------------------------------------===//

#include "runtime/core/JsonText.h"
#include "runtime/core/FloatFormat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace {

using tgc::Json;

/// The error parseJson gives for `text`, or "parsed" when it gives none.
std::string errorOf(const std::string &text) {
  Json value;
  std::string error;
  return tgc::parseJson(text, value, error) ? "parsed" : error;
}

Json parsed(const std::string &text) {
  Json value;
  std::string error;
  EXPECT_TRUE(tgc::parseJson(text, value, error)) << error;
  return value;
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(JsonText, UnexpectedTokensPointAtTheirStart) {
  // A missing comma: the string after it, on line 2.
  EXPECT_EQ(errorOf("{\"a\": 0,\n \"ab\": 2 \"<|endoftext|>\": 3}"),
            "line 2, column 10: syntax error while parsing object - "
            "unexpected string literal; expected '}'");
  // A quote escaped inside the unexpected string does not end it early.
  EXPECT_EQ(errorOf("[\"a\" \"b\\\"c\"]"),
            "line 1, column 6: syntax error while parsing array - unexpected "
            "string literal; expected ']'");
  EXPECT_EQ(errorOf("[1 -2.5e3]"),
            "line 1, column 4: syntax error while parsing array - unexpected "
            "number literal; expected ']'");
  // Bytes before the number that could belong to one.
  EXPECT_EQ(errorOf("[1-2]").substr(0, 17), "line 1, column 3:");
  EXPECT_EQ(errorOf("[true1e5]").substr(0, 17), "line 1, column 6:");
  EXPECT_EQ(errorOf("[\"a\" false]"),
            "line 1, column 6: syntax error while parsing array - unexpected "
            "false literal; expected ']'");
  EXPECT_EQ(errorOf("{\"a\":1,}"),
            "line 1, column 8: syntax error while parsing object key - "
            "unexpected '}'; expected string literal");
  EXPECT_EQ(errorOf("{} 5"),
            "line 1, column 4: syntax error while parsing value - unexpected "
            "number literal; expected end of input");
}

TEST(JsonText, LexerErrorsPointWhereReadingFailed) {
  EXPECT_EQ(errorOf("[tru]"), "line 1, column 5: syntax error while parsing "
                              "value - invalid literal");
  EXPECT_EQ(errorOf("\"a\nb\""),
            "line 1, column 3: syntax error while parsing value - invalid "
            "string: control character U+000A (LF) must be escaped to "
            "\\u000A or \\n");
  EXPECT_EQ(errorOf("[1.]"), "line 1, column 4: syntax error while parsing "
                             "value - invalid number; expected digit after "
                             "'.'");
}

TEST(JsonText, TheEndOfInputIsAfterTheLastByte) {
  EXPECT_EQ(errorOf("{\"format\": \n"),
            "line 2, column 1: syntax error while parsing value - unexpected "
            "end of input; expected '[', '{', or a literal");
  EXPECT_EQ(errorOf(""), "line 1, column 1: syntax error while parsing value "
                         "- unexpected end of input; expected '[', '{', or a "
                         "literal");
}

TEST(JsonText, AnUnterminatedStringIsNotEchoed) {
  // nlohmann's message would hold the rest of the file.
  std::string text = "{\"a\": \"" + std::string(100000, 'x');
  EXPECT_EQ(errorOf(text), "line 1, column 100008: syntax error while "
                           "parsing value - invalid string: missing closing "
                           "quote");
}

TEST(JsonText, RepeatedKeysAreRefused) {
  EXPECT_EQ(errorOf("{\"a\": 1,\n \"b\": {\"a\": 2}, \"a\": 3}"),
            "line 2, column 17: duplicate key \"a\"");
  // The same key in different objects is fine.
  EXPECT_EQ(errorOf("[{\"a\": 1}, {\"a\": 2}]"), "parsed");
}

TEST(JsonText, NestingIsLimited) {
  std::string deepest = std::string(512, '[') + std::string(512, ']');
  EXPECT_EQ(errorOf(deepest), "parsed");
  EXPECT_EQ(errorOf(std::string(513, '[') + std::string(513, ']')),
            "line 1, column 513: nesting deeper than 512");
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

TEST(JsonText, IntegersAreInt64) {
  Json value = parsed("[9223372036854775807, -9223372036854775808, 0, "
                      "9223372036854775808, 1.0]");
  ASSERT_TRUE(value[0].is_number_integer());
  EXPECT_EQ(value[0].get<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(value[1].get<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(value[2].type(), Json::value_t::number_integer);
  // Beyond int64: a double, as before; 1.0 is not an integer.
  EXPECT_TRUE(value[3].is_number_float());
  EXPECT_TRUE(value[4].is_number_float());
}

TEST(JsonText, ObjectsKeepTheirOrder) {
  Json value = parsed("{\"z\": 1, \"a\": 2, \"m\": {\"y\": 3, \"b\": 4}}");
  EXPECT_EQ(tgc::writeJson(value), "{\"z\":1,\"a\":2,\"m\":{\"y\":3,\"b\":4}}");
}

TEST(JsonText, AVocabularySizedObjectParses) {
  std::string text = "{";
  for (int i = 0; i < 50257; ++i)
    text +=
        (i ? ",\"t" : "\"t") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}";
  Json value = parsed(text);
  ASSERT_EQ(value.size(), 50257u);
  EXPECT_EQ(value["t50256"].get<int64_t>(), 50256);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

TEST(JsonText, FloatsHavePrintfDigits) {
  Json value = {2.0, 100.0, 0.1 + 0.2, 1e-05, 0.0001, -0.0};
  EXPECT_EQ(tgc::writeJson(value), "[2,1e+02,0.30000000000000004,1e-05,"
                                   "0.0001,-0]");
  Json nonFinite = {std::numeric_limits<double>::infinity(), std::nan(""),
                    tgc::jsonFloat(std::nanf(""))};
  EXPECT_EQ(tgc::writeJson(nonFinite), "[null,null,null]");
}

TEST(JsonText, Float32HasTheDigitsOfTheFloat) {
  EXPECT_EQ(tgc::writeJson(tgc::jsonFloat(0.1f)), "0.1");
  EXPECT_EQ(tgc::writeJson(tgc::jsonFloat(2.3025851f)), "2.3025851");
  EXPECT_EQ(tgc::writeJson(tgc::jsonFloat(1e-05f)), "1e-05");
  // Any float: what the log gets is formatFloat's text, which strtof reads
  // back to the same bits.
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    if (!std::isfinite(f))
      continue;
    std::string text = tgc::writeJson(tgc::jsonFloat(f));
    ASSERT_EQ(text, tgc::formatFloat(f)) << "bits " << bits;
    float back = std::strtof(text.c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&back, &f, sizeof(f)), 0) << text;
  }
}

TEST(JsonText, StringsAreEscapedAsBefore) {
  Json value = {{"a\"b\\c\n\t\x01/\x7f", "caf\xc3\xa9"}, {"bad", "\xff"}};
  EXPECT_EQ(tgc::writeJson(value),
            "{\"a\\\"b\\\\c\\n\\t\\u0001/\x7f\":\"caf\xc3\xa9\","
            "\"bad\":\"\xef\xbf\xbd\"}");
}

TEST(JsonText, KindNames) {
  EXPECT_STREQ(tgc::jsonKindName(Json(3)), "a number");
  EXPECT_STREQ(tgc::jsonKindName(Json(3.5)), "a number");
  EXPECT_STREQ(tgc::jsonKindName(Json::array()), "an array");
  EXPECT_STREQ(tgc::jsonKindName(Json::value_t::number_integer), "an integer");
}

} // namespace
