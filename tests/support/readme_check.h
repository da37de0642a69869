#pragma once
// The README's op lists are checked against the op tables: every op a table declares must be
// named in README.md (as a whole word), so an op cannot be added without being documented.
// Needs WICK_SOURCE_DIR (the test target's compile definition).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace wick::test {

// The words (identifiers) of README.md.
inline const std::set<std::string>& readme_words() {
  static const std::set<std::string> words = [] {
    std::ifstream in(std::string(WICK_SOURCE_DIR) + "/README.md");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::set<std::string> w;
    const std::regex word_re("[A-Za-z_][A-Za-z0-9_]*");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), word_re); it != std::sregex_iterator(); ++it)
      w.insert(it->str());
    return w;
  }();
  return words;
}

// Fails for each of `ops` (from the table named `table`) that README.md does not name.
inline void expect_readme_names(const std::set<std::string>& ops, const std::string& table) {
  ASSERT_GT(readme_words().size(), 100u) << "README.md not found under " << WICK_SOURCE_DIR;
  for (const std::string& op : ops)
    EXPECT_TRUE(readme_words().count(op)) << op << " (in the " << table << ") is not named in README.md";
}

}  // namespace wick::test
