#include "examples/common/args.h"

#include <cstdio>
#include <stdexcept>

namespace wick::examples {

namespace {

// The value of "--flag=VALUE".
bool parse_switch(const std::string& name, const std::string& value) {
  for (const char* yes : {"true", "1", "yes", "on"})
    if (value == yes) return true;
  for (const char* no : {"false", "0", "no", "off"})
    if (value == no) return false;
  throw std::runtime_error("--" + name + " is a switch: give it alone, or =true or =false, not '" + value + "'");
}

}  // namespace

Args& Args::option(const std::string& name, const std::string& default_value, const std::string& help) {
  order_.push_back(name);
  entries_[name] = {default_value, help, false, false};
  return *this;
}

Args& Args::flag(const std::string& name, const std::string& help) {
  order_.push_back(name);
  entries_[name] = {"", help, true, false};
  return *this;
}

bool Args::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s: %s\n\noptions:\n", program_.c_str(), summary_.c_str());
      for (const auto& name : order_) {
        const Entry& e = entries_.at(name);
        std::printf("  --%-16s %s%s\n", (name + (e.is_flag ? "" : " V")).c_str(), e.help.c_str(),
                    e.is_flag || e.value.empty() ? "" : (" (default " + e.value + ")").c_str());
      }
      return false;
    }
    if (a.rfind("--", 0) != 0) throw std::runtime_error("unexpected argument '" + a + "' (see --help)");
    std::string name = a.substr(2), value;
    size_t eq = name.find('=');
    bool has_value = eq != std::string::npos;
    if (has_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto it = entries_.find(name);
    if (it == entries_.end()) throw std::runtime_error("unknown option --" + name + " (see --help)");
    Entry& e = it->second;
    if (e.is_flag) {
      // "--quiet" sets it; "--quiet=false" (or 0, no, off) clears it, as a later word wins.
      e.set = !has_value || parse_switch(name, value);
      continue;
    }
    e.set = true;
    if (!has_value) {
      if (i + 1 >= argc) throw std::runtime_error("--" + name + " needs a value");
      value = argv[++i];
    }
    e.value = value;
  }
  return true;
}

std::string Args::str(const std::string& name) const { return entries_.at(name).value; }

int64_t Args::integer(const std::string& name) const {
  const std::string& v = str(name);
  size_t used = 0;
  int64_t out = 0;
  try {
    out = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::runtime_error("--" + name + " wants a whole number, got '" + v + "'");
  return out;
}

double Args::number(const std::string& name) const {
  const std::string& v = str(name);
  size_t used = 0;
  double out = 0;
  try {
    out = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::runtime_error("--" + name + " wants a number, got '" + v + "'");
  return out;
}

bool Args::is_set(const std::string& name) const { return entries_.at(name).set; }

}  // namespace wick::examples
