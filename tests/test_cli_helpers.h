// Running the built `lathe` (LATHE_BINARY) as a user does, for the command-line tests: from a
// temporary directory (the programs and kernels are built into the binary), capturing the output
// and the exit status.
#pragma once

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct Ran {
  int status = -1;
  std::string out;  // stdout, then stderr when both
};

// stderr joins stdout unless with_stderr is false, when it is dropped (for output that is parsed).
inline Ran run_lathe(const std::string& args, bool with_stderr = true) {
  const std::string command = "cd " + ::testing::TempDir() + " && " + std::string(LATHE_BINARY) + " " + args +
                              (with_stderr ? " 2>&1" : " 2>/dev/null");
  Ran r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}
