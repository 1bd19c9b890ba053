#pragma once
// Running the built `eqfuse` binary from a test: no shell, stdout and stderr captured apart,
// XDG_CACHE_HOME pointed at a fresh folder so tests never touch the user's proof cache.
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

extern char** environ;

namespace eqfuse::test {

namespace fs = std::filesystem;

struct Result {
  int code = -1;
  std::string out, err;
};

inline fs::path fresh_dir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("eqfuse_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The proof cache of this test run, never ~/.cache.
inline const fs::path& cache_home() {
  static const fs::path dir = fresh_dir("cli_cache");
  return dir;
}

// Runs the eqfuse binary with `args` (no shell), stdout and stderr captured apart, in the folder
// `cwd` when given.
inline Result run_eqfuse(const std::vector<std::string>& args, const fs::path& cwd = {}) {
  std::vector<std::string> argv_s = {EQFUSE_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s = {"XDG_CACHE_HOME=" + cache_home().string()};
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "XDG_CACHE_HOME=", 15) != 0) env_s.emplace_back(*e);
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  REQUIRE(pipe(out_pipe) == 0);
  REQUIRE(pipe(err_pipe) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
    posix_spawn_file_actions_addclose(&actions, fd);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  REQUIRE(spawned == 0);

  Result r;
  std::array<pollfd, 2> fds = {pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks = {&r.out, &r.err};
  int open_fds = 2;
  std::array<char, 4096> buf{};
  while (open_fds > 0) {
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf.data(), buf.size());
      if (n > 0) {
        sinks[i]->append(buf.data(), static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string describe(const std::vector<std::string>& args, const Result& r) {
  std::string cmd = "$ eqfuse";
  for (const std::string& a : args) cmd += " " + a;
  return cmd + "\nexit " + std::to_string(r.code) + "\n--- stdout\n" + r.out + "--- stderr\n" +
         r.err;
}

}  // namespace eqfuse::test
