#pragma once
// Runs a piece of work in a child process under a hard deadline, for solvers that cannot be
// trusted to stop or stay quiet. CBC overruns its own time limit by minutes on large models
// (root LP, cuts, preprocessing), has crashed in CglPreProcess::postProcess when stopped there,
// and prints banners to stdout whatever its log level. In a child it can be killed at the
// deadline, cannot take eqfuse down, and writes nothing to our stdout (`--json` promises
// exactly one JSON document there). The child reports what it finds as it goes, so whatever
// it sent before being killed still counts. A child dies with the thread that started it, so
// children of a killed child (neighbourhood search runs each sub-solve in one) go too.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace eqfuse::extract {

using Report = std::function<void(std::string_view)>;

struct IsolatedRun {
  std::string received;   // everything the child reported, in order
  bool finished = false;  // the child returned from `work` before the deadline
};

using Work = std::function<void(const Report&)>;

// Forks; the child runs `work` (its stdout and stderr go to /dev/null) and exits. The parent
// collects the reports until the child ends or `seconds` pass, then kills it.
IsolatedRun run_isolated(double seconds, const Work& work);

// The same for several pieces of work at once, a child each, under one deadline. After each
// report `stop` sees what every child sent so far; when it says so the other children are
// killed.
std::vector<IsolatedRun> run_isolated(
    double seconds, const std::vector<Work>& works,
    const std::function<bool(const std::vector<IsolatedRun>&)>& stop = {});

}  // namespace eqfuse::extract
