// Text hygiene: UTF-8 repair, terminal stripping and HTML/script escaping.
#include "seedance/base/text.h"

#include "gtest/gtest.h"

namespace seedance::base {
namespace {

TEST(TextTest, InvalidUtf8IsReplacedNotThrown) {
  EXPECT_TRUE(IsValidUtf8("na\xC3\xAFve"));
  for (const char* bad : {"\xFF", "\xC3", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
  EXPECT_EQ(SanitizeUtf8("a\xFFz"), "a\xEF\xBF\xBDz");
  nlohmann::json j = {{"name", std::string("bad\xFF")}};
  EXPECT_EQ(DumpJson(j), "{\"name\":\"bad\xEF\xBF\xBD\"}");
}

TEST(TextTest, TerminalOutputHasNoControlCharacters) {
  EXPECT_EQ(ForTerminal("pod\x1B[31mred\r"), "pod\\x1B[31mred\\x0D");
  EXPECT_EQ(ForTerminal("a\xC2\x9B" "b"), "a\\x9Bb");  // C1 CSI
  EXPECT_EQ(ForTerminal("line\n", true), "line\n");
  EXPECT_EQ(ForTerminal("line\n"), "line\\x0A");
}

TEST(TextTest, HtmlContexts) {
  EXPECT_EQ(HtmlEscape("<img src=x onerror='a()'>&\""),
            "&lt;img src=x onerror=&#39;a()&#39;&gt;&amp;&quot;");
  const std::string s = JsonForScript(nlohmann::json{{"n", "</script><img onerror=alert(1)>"}});
  EXPECT_EQ(s.find("</script"), std::string::npos);
  EXPECT_EQ(s.find('<'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(s)["n"], "</script><img onerror=alert(1)>");
}

TEST(TextTest, JsonNestingDepthIgnoresStringsAndStopsPastTheLimit) {
  EXPECT_EQ(JsonNestingDepth("{\"a\": [1, {\"b\": \"[[[\\\"{\"}]}", 10), 3);
  EXPECT_EQ(JsonNestingDepth(std::string(100000, '['), 64), 65);
  EXPECT_EQ(JsonNestingDepth("42", 64), 0);
}

TEST(TextTest, ClipCutsAtCharacterBoundary) {
  EXPECT_EQ(Clip("abcdef", 3), "abc...");
  EXPECT_EQ(Clip("\xC3\xA9\xC3\xA9", 3), "\xC3\xA9...");
}

}  // namespace
}  // namespace seedance::base
