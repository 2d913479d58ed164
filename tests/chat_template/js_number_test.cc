// Numbers written and read as JavaScript does (chat_template/internal/js_number.h).
#include "chat_template/internal/js_number.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace switchyard::chat_template::internal {
namespace {

TEST(JsNumber, ToString) {
  EXPECT_EQ(JsNumberToString(0), "0");
  EXPECT_EQ(JsNumberToString(-0.0), "0");
  EXPECT_EQ(JsNumberToString(42), "42");
  EXPECT_EQ(JsNumberToString(-1.5), "-1.5");
  EXPECT_EQ(JsNumberToString(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(JsNumberToString(1e21), "1e+21");
  EXPECT_EQ(JsNumberToString(1e20), "100000000000000000000");
  EXPECT_EQ(JsNumberToString(123e-7), "0.0000123");
  EXPECT_EQ(JsNumberToString(1.5e-7), "1.5e-7");
  EXPECT_EQ(JsNumberToString(std::nan("")), "NaN");
  EXPECT_EQ(JsNumberToString(-std::numeric_limits<double>::infinity()), "-Infinity");
  EXPECT_EQ(JsNumberToString(5e-324), "5e-324");
  EXPECT_EQ(JsNumberToString(1.7976931348623157e308), "1.7976931348623157e+308");
}

TEST(JsNumber, FloatsAndJson) {
  EXPECT_EQ(JsFloatToString(2), "2.0");
  EXPECT_EQ(JsFloatToString(-0.0), "-0.0");
  EXPECT_EQ(JsFloatToString(2.25), "2.25");
  EXPECT_EQ(JsFloatToString(1e21), "1e+21");
  EXPECT_EQ(JsonNumber(2), "2");
  EXPECT_EQ(JsonNumber(std::numeric_limits<double>::infinity()), "null");
}

TEST(JsNumber, Parsing) {
  EXPECT_EQ(JsParseInt("  -42abc"), -42);
  EXPECT_EQ(JsParseInt("1e3"), 1);
  EXPECT_TRUE(std::isnan(JsParseInt("abc")));
  EXPECT_EQ(JsParseFloat(" .5e1x"), 5);
  EXPECT_EQ(JsParseFloat("-Infinityx"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(JsParseFloat("1e"), 1);
  EXPECT_TRUE(std::isnan(JsParseFloat("e1")));
  EXPECT_EQ(JsStringToNumber(" 12 "), 12);
  EXPECT_EQ(JsStringToNumber(""), 0);
  EXPECT_EQ(JsStringToNumber("0x1F"), 31);
  EXPECT_TRUE(std::isnan(JsStringToNumber("12px")));
}

}  // namespace
}  // namespace switchyard::chat_template::internal
