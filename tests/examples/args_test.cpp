// The examples' command-line parser (examples/common/args.h): errors that do not name the
// program (run_main() does, once), switches that take =true/=false.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "examples/common/args.h"

namespace wick::examples {
namespace {

Args declared() {
  Args a("prog", "a test program");
  a.option("lr", "0.1", "learning rate").option("epochs", "3", "epochs").flag("quiet", "no progress bar");
  return a;
}

bool parse(Args& a, std::vector<std::string> words) {
  std::vector<char*> argv{const_cast<char*>("prog")};
  for (auto& w : words) argv.push_back(w.data());
  return a.parse(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> words) {
  Args a = declared();
  try {
    parse(a, std::move(words));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ExampleArgs, SwitchesAreOnAloneAndTakeTrueOrFalse) {
  for (const auto& [words, on] : std::vector<std::pair<std::vector<std::string>, bool>>{
           {{}, false},
           {{"--quiet"}, true},
           {{"--quiet=true"}, true},
           {{"--quiet=1"}, true},
           {{"--quiet=false"}, false},
           {{"--quiet=0"}, false},
           {{"--quiet=no"}, false},
           {{"--quiet", "--quiet=off"}, false},
           {{"--quiet=false", "--quiet"}, true}}) {
    Args a = declared();
    ASSERT_TRUE(parse(a, words));
    EXPECT_EQ(a.is_set("quiet"), on) << ::testing::PrintToString(words);
  }
  EXPECT_EQ(error_of({"--quiet=maybe"}),
            "--quiet is a switch: give it alone, or =true or =false, not 'maybe'");
}

TEST(ExampleArgs, OptionsTakeTheNextWordOrAnEqualsValue) {
  Args a = declared();
  ASSERT_TRUE(parse(a, {"--lr", "0.5", "--epochs=7"}));
  EXPECT_EQ(a.number("lr"), 0.5);
  EXPECT_EQ(a.integer("epochs"), 7);
  Args b = declared();
  ASSERT_TRUE(parse(b, {}));
  EXPECT_EQ(b.number("lr"), 0.1);
  EXPECT_FALSE(b.is_set("lr"));
}

TEST(ExampleArgs, ErrorsSayWhatIsWrongWithoutTheProgramName) {
  EXPECT_EQ(error_of({"--bogus"}), "unknown option --bogus (see --help)");
  EXPECT_EQ(error_of({"stray"}), "unexpected argument 'stray' (see --help)");
  EXPECT_EQ(error_of({"--lr"}), "--lr needs a value");
  Args a = declared();
  ASSERT_TRUE(parse(a, {"--epochs", "3.5", "--lr", "fast"}));
  EXPECT_THROW(
      {
        try {
          a.integer("epochs");
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "--epochs wants a whole number, got '3.5'");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_THROW(a.number("lr"), std::runtime_error);
}

}  // namespace
}  // namespace wick::examples
