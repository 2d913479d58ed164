#include "base/logging.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace switchyard {
namespace {

LogKeys SampleKeys() {
  LogKeys k;
  k.workflow_id = "wf_1";
  k.node_id = "plan";
  k.transfer_id = "t9";
  k.model_epoch = 3;
  k.With("bytes", "4096");
  return k;
}

TEST(LoggingTest, TextLineCarriesCorrelationKeys) {
  std::string line = FormatLogLine(LogFormat::kText, LogLevel::kInfo, "committed", SampleKeys());
  EXPECT_EQ(line,
            "info committed workflow_id=wf_1 node_id=plan transfer_id=t9 model_epoch=3 "
            "bytes=4096");
}

TEST(LoggingTest, JsonLineIsOneObjectWithKeys) {
  std::string line = FormatLogLine(LogFormat::kJson, LogLevel::kWarn, "say \"hi\"\n", SampleKeys());
  EXPECT_EQ(line,
            "{\"level\":\"warn\",\"msg\":\"say \\\"hi\\\"\\n\",\"workflow_id\":\"wf_1\","
            "\"node_id\":\"plan\",\"transfer_id\":\"t9\",\"model_epoch\":3,\"bytes\":\"4096\"}");
}

TEST(LoggingTest, JsonEscapeKeepsUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(JsonEscape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");           // é, €, an emoji
  EXPECT_EQ(JsonEscape("a\xff\xfe"), "a\xEF\xBF\xBD\xEF\xBF\xBD");  // the error-body case
  EXPECT_EQ(JsonEscape("\xc3"), "\xEF\xBF\xBD");                    // truncated sequence
  EXPECT_EQ(JsonEscape("\xc0\xaf"), "\xEF\xBF\xBD\xEF\xBF\xBD");    // overlong '/'
  EXPECT_EQ(JsonEscape("\xed\xa0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(JsonEscape("\xf4\x90\x80\x80x"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");
}

TEST(LoggingTest, JsonEscapeControlCharacters) {
  EXPECT_EQ(JsonEscape(std::string("a\x01") + "b\\"), "a\\u0001b\\\\");
}

TEST(LoggingTest, ParseLevel) {
  LogLevel l;
  EXPECT_TRUE(ParseLogLevel("debug", &l));
  EXPECT_EQ(l, LogLevel::kDebug);
  EXPECT_FALSE(ParseLogLevel("loud", &l));
  EXPECT_EQ(l, LogLevel::kInfo);
}

TEST(LoggingTest, JsonFileSinkWritesOneObjectPerLine) {
  std::string path = ::testing::TempDir() + "/sy_log_test.jsonl";
  std::remove(path.c_str());
  InitLogging({LogFormat::kJson, LogLevel::kDebug, path});
  Log(LogLevel::kInfo, "hello", SampleKeys());
  Log(LogLevel::kTrace, "dropped");  // below the level
  InitLogging({});                   // flushes and closes the file sink
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line.rfind("{\"ts\":\"", 0), 0u) << line;
  EXPECT_NE(line.find("\"msg\":\"hello\",\"workflow_id\":\"wf_1\""), std::string::npos) << line;
  EXPECT_EQ(line.back(), '}');
  EXPECT_FALSE(std::getline(in, line)) << "trace line should have been filtered: " << line;
}

}  // namespace
}  // namespace switchyard
