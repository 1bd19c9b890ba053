#include "extract/isolated.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "support/error.h"

namespace eqfuse::extract {
namespace {

// Forks a child that runs `work` with its reports going to the returned pipe's read end.
pid_t start_child(const Work& work, int* read_fd) {
  int fds[2];
  if (pipe(fds) != 0) throw Error("isolated run: pipe failed", Error::Kind::Internal);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw Error("isolated run: fork failed", Error::Kind::Internal);
  if (pid == 0) {
    // Dies with its parent: a killed neighbourhood search must not leave its sub-solve behind.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
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
  *read_fd = fds[0];
  return pid;
}

}  // namespace

IsolatedRun run_isolated(double seconds, const Work& work) {
  return std::move(run_isolated(seconds, std::vector<Work>{work}).front());
}

std::vector<IsolatedRun> run_isolated(
    double seconds, const std::vector<Work>& works,
    const std::function<bool(const std::vector<IsolatedRun>&)>& stop) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(seconds);
  const size_t count = works.size();
  std::vector<pid_t> pids(count);
  std::vector<pollfd> fds(count);
  for (size_t i = 0; i < count; ++i) {
    int fd = -1;
    pids[i] = start_child(works[i], &fd);
    fds[i] = {fd, POLLIN, 0};
  }
  std::vector<IsolatedRun> out(count);
  std::vector<char> eof(count, 0);
  size_t open_count = count;
  char buffer[65536];
  bool stopped = false;
  while (open_count > 0 && !stopped) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0) break;
    int ready = poll(fds.data(), count, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    for (size_t i = 0; i < count; ++i) {
      if (eof[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(fds[i].fd, buffer, sizeof buffer);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        eof[i] = 1;
        close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores it from now on
        --open_count;
      } else {
        out[i].received.append(buffer, static_cast<size_t>(r));
      }
    }
    if (stop && stop(out)) stopped = true;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!eof[i]) kill(pids[i], SIGKILL);
    int status = 0;
    while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
    }
    out[i].finished = eof[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (const pollfd& p : fds)
    if (p.fd >= 0) close(p.fd);
  return out;
}

}  // namespace eqfuse::extract
