// HttpRequest's query values (application/x-www-form-urlencoded decoding, checked as text)
// and the UTF-8 checks (http/http.h).
#include "http/http.h"

#include <gtest/gtest.h>

namespace switchyard::http {
namespace {

HttpRequest Get(const std::string& target) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  return r;
}

TEST(HttpRequestTest, QueryValuesArePercentDecoded) {
  HttpRequest r = Get("/v1/x?reason=tool%20timed+out%3A%20exit%2B1&empty=&bare&utf=%e2%9c%93");
  EXPECT_EQ(*r.Query("reason"), "tool timed out: exit+1");
  EXPECT_EQ(*r.Query("utf"), "\xe2\x9c\x93") << "lower-case hex digits";
  EXPECT_EQ(*r.Query("empty"), "");
  EXPECT_EQ(*r.Query("bare"), "");
  EXPECT_EQ(*r.Query("absent"), "");
  EXPECT_EQ(*Get("/v1/x").Query("reason"), "");
  EXPECT_EQ(*Get("/v1/x?a=1&a=2").Query("a"), "1") << "the first occurrence";
}

TEST(HttpRequestTest, MalformedEscapeIsInvalidArgumentNamingTheParameter) {
  for (const char* target : {"/v1/x?reason=%", "/v1/x?reason=ab%2", "/v1/x?reason=%zz",
                             "/v1/x?reason=%%41", "/v1/x?reason=%4g"}) {
    auto v = Get(target).Query("reason");
    ASSERT_FALSE(v.ok()) << target;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << target;
    EXPECT_EQ(v.status().message().rfind("reason: malformed %-escape", 0), 0u)
        << target << ": " << v.status().message();
  }
  EXPECT_TRUE(Get("/v1/x?other=%zz&reason=ok").Query("reason").ok())
      << "only the parameter asked for is decoded";
}

// A value that is not UTF-8 text (raw or escaped) is refused naming the parameter: stored
// in a proto3 string field it would be written but would not parse back.
TEST(HttpRequestTest, NonUtf8OrControlCharacterValueIsInvalidArgument) {
  for (const char* target : {"/v1/x?reason=%FF", "/v1/x?reason=a\xff", "/v1/x?reason=%C0%AF",
                             "/v1/x?reason=%ED%A0%80", "/v1/x?reason=%E2%9C"}) {
    auto v = Get(target).Query("reason");
    ASSERT_FALSE(v.ok()) << target;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << target;
    EXPECT_NE(v.status().message().find("reason: byte 0x"), std::string::npos)
        << target << ": " << v.status().message();
    EXPECT_NE(v.status().message().find("is not UTF-8"), std::string::npos) << v.status().message();
  }
  for (const char* target :
       {"/v1/x?reason=a%07", "/v1/x?reason=%0A", "/v1/x?reason=%7F", "/v1/x?reason=%C2%85"}) {
    auto v = Get(target).Query("reason");
    ASSERT_FALSE(v.ok()) << target;
    EXPECT_NE(v.status().message().find("reason: control character U+00"), std::string::npos)
        << target << ": " << v.status().message();
  }
  EXPECT_EQ(*Get("/v1/x?reason=%C2%A0caf%C3%A9%F0%9F%98%80").Query("reason"),
            "\xc2\xa0"
            "caf\xc3\xa9\xf0\x9f\x98\x80");
}

TEST(HttpTextTest, PercentDecodeKeepsPlusFormDecodeMakesItASpace) {
  EXPECT_EQ(*PercentDecode("job%3A1+x%2f"), "job:1+x/");
  EXPECT_EQ(*FormDecode("job%3A1+x%2f"), "job:1 x/");
  EXPECT_EQ(*PercentDecode(""), "");
  EXPECT_FALSE(PercentDecode("a%"));
  EXPECT_FALSE(PercentDecode("a%1"));
  EXPECT_FALSE(FormDecode("%G0"));
}

}  // namespace
}  // namespace switchyard::http
