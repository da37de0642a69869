#pragma once
// Command-line options for the examples: "--name value" pairs and "--flag" switches, each
// declared with a default and a help line, so `--help` lists them all.
#include <map>
#include <string>
#include <vector>

namespace wick::examples {

class Args {
 public:
  Args(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}
  // Declares an option; returns *this for chaining.
  Args& option(const std::string& name, const std::string& default_value, const std::string& help);
  Args& flag(const std::string& name, const std::string& help);
  // Parses argv. Returns false after printing help (--help); throws std::runtime_error on
  // an unknown option, a missing value or a switch given a value other than true/false
  // (1/0, yes/no, on/off). Messages do not name the program: run_main() prefixes it.
  bool parse(int argc, char** argv);

  std::string str(const std::string& name) const;
  int64_t integer(const std::string& name) const;
  double number(const std::string& name) const;
  bool is_set(const std::string& name) const;  // a flag on (its last occurrence wins)

 private:
  struct Entry {
    std::string value, help;
    bool is_flag = false, set = false;
  };
  std::string program_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Entry> entries_;
};

}  // namespace wick::examples
