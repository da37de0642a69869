#pragma once
// Runs a command through /bin/sh (popen), for the tests that drive wickrun and the
// training worker as real programs.
#include <stdio.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace wick::test {

struct ShellRun {
  int status = -1;     // as from waitpid
  double seconds = 0;  // how long it took
  std::string output;  // what it printed on stdout (append 2>&1 to the command for stderr)
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }
};

inline ShellRun run_shell(const std::string& command) {
  ShellRun r;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr) << command;
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  r.status = ::pclose(pipe);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace wick::test
