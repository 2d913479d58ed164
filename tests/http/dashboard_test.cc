// The dashboard page: embedded bytes equal http/dashboard.html, self-contained (no
// external resources), served at / and /index.html without auth, GET/HEAD only.
#include "http/dashboard.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "tests/serve/in_process_api.h"

namespace switchyard::http {
namespace {

std::string SourceHtml() {
  std::ifstream in(std::string(SY_SOURCE_DIR) + "/http/dashboard.html", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Dashboard, EmbeddedPageIsTheSourceFile) {
  std::string src = SourceHtml();
  ASSERT_FALSE(src.empty());
  EXPECT_EQ(DashboardHtml(), src);
}

TEST(Dashboard, PageLoadsNothingFromElsewhere) {
  std::string html(DashboardHtml());
  // No src=/href= to another origin, no external script or stylesheet, no @import.
  std::regex external(R"((src|href)\s*=\s*["']?\s*(https?:)?//)", std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, external));
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("rel=\"stylesheet\""), std::string::npos);
  // It reads the endpoints the service serves, with the bearer token.
  for (const char* s :
       {"/v1/workflows", "/v1/cluster", "Authorization", "#token", "localStorage"}) {
    EXPECT_NE(html.find(s), std::string::npos) << s;
  }
}

TEST(Dashboard, HasChartsTimelineAndFormatters) {
  std::string html(DashboardHtml());
  // Charts over time, the selected workflow's timeline (its own route), the formatters
  // (tests/browser/test_dashboard.py checks them rendered in Chromium).
  for (const char* s : {"id=\"chart-tiers\"", "id=\"chart-links\"", "id=\"chart-queue\"",
                        "id=\"timeline\"", "\"/timeline\"", "fmtBytes", "fmtRate", "fmtDuration",
                        "fmtPercent", "\"tl-row tl-\"", "CHART_SAMPLES"}) {
    EXPECT_NE(html.find(s), std::string::npos) << s;
  }
  // Plain SVG drawn by the page itself: no chart library, no canvas from elsewhere.
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_NE(html.find("http://www.w3.org/2000/svg"), std::string::npos);  // the SVG namespace
}

TEST(Dashboard, ServedWithoutAuthWithRestrictivePolicy) {
  testing::InProcessApi env("dashboard", "tok-dashboard-000000000000");
  for (const char* target : {"/", "/index.html", "/?x=1"}) {
    HttpRequest req;
    req.method = "GET";
    req.target = target;
    HttpResponse r = env.api->Handle(req);
    EXPECT_EQ(r.status, 200) << target;
    EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
    EXPECT_EQ(r.body, DashboardHtml());
    EXPECT_NE(r.headers["content-security-policy"].find("default-src 'none'"), std::string::npos);
    EXPECT_NE(r.headers["content-security-policy"].find("connect-src 'self'"), std::string::npos);
  }
  HttpRequest head;
  head.method = "HEAD";
  head.target = "/";
  EXPECT_EQ(env.api->Handle(head).status, 200);
  EXPECT_TRUE(env.api->Handle(head).body.empty());
  HttpRequest post;
  post.method = "POST";
  post.target = "/";
  HttpResponse r = env.api->Handle(post);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.headers["allow"], "GET, HEAD");
  // The data the page reads still needs the token.
  HttpRequest data;
  data.method = "GET";
  data.target = "/v1/workflows";
  EXPECT_EQ(env.api->Handle(data).status, 401);
}

}  // namespace
}  // namespace switchyard::http
