#include "extract/isolated.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "support/error.h"

namespace eqfuse::extract {

IsolatedRun run_isolated(double seconds, const std::function<void(const Report&)>& work) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(seconds);
  int fds[2];
  if (pipe(fds) != 0) throw Error("isolated run: pipe failed", Error::Kind::Internal);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) throw Error("isolated run: fork failed", Error::Kind::Internal);
  if (pid == 0) {
    close(fds[0]);
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDERR_FILENO);
    Report report = [&](std::string_view message) {
      for (size_t done = 0; done < message.size();) {
        ssize_t w = write(fds[1], message.data() + done, message.size() - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) _exit(1);
        done += static_cast<size_t>(w);
      }
    };
    try {
      work(report);
    } catch (...) {
      _exit(1);
    }
    _exit(0);
  }
  close(fds[1]);
  IsolatedRun out;
  char buffer[65536];
  bool eof = false;
  while (!eof) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    ssize_t r = read(fds[0], buffer, sizeof buffer);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      eof = true;
    else
      out.received.append(buffer, static_cast<size_t>(r));
  }
  close(fds[0]);
  if (!eof) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  out.finished = eof && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return out;
}

}  // namespace eqfuse::extract
