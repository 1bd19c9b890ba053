#include "tools/eqfuse_bench/ort_peer.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

namespace eqfuse::bench {
namespace {

namespace fs = std::filesystem;

// argv: MODEL OPTIMIZED_OUT RUNS THREADS; prints {"ms": median} on its last line.
constexpr const char* kScript = R"JS(
const ort = require('onnxruntime-node');
(async () => {
  const [model, optimized, runs, threads] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], graphOptimizationLevel: 'extended',
    optimizedModelFilePath: optimized, intraOpNumThreads: Number(threads) });
  const feeds = {};
  for (const name of s.inputNames) {
    const meta = s.inputMetadata ? s.inputMetadata.find(m => m.name === name) : null;
    const dims = meta && meta.shape ? meta.shape.map(d => (typeof d === 'number' ? d : 1)) : [1];
    const type = meta && meta.type ? meta.type : 'float32';
    const n = dims.reduce((a, b) => a * b, 1);
    const data = type === 'int64' ? new BigInt64Array(n)
               : type === 'int32' ? new Int32Array(n) : new Float32Array(n);
    feeds[name] = new ort.Tensor(type, data, dims);
  }
  await s.run(feeds);
  const ms = [];
  for (let i = 0; i < Number(runs); ++i) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  console.log(JSON.stringify({ ms: ms[Math.floor(ms.length / 2)] }));
})().catch(e => { console.log(JSON.stringify({ error: String(e.message || e) })); });
)JS";

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The threads the twin runs on: OpenMP's, OMP_NUM_THREADS where set, else the CPUs this process
// may run on (its affinity mask, as OpenMP counts them).
int twin_threads() {
  if (const char* n = std::getenv("OMP_NUM_THREADS"); n && std::atoi(n) > 0) return std::atoi(n);
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 0)
    return CPU_COUNT(&cpus);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

// Runs `command`, returning its stdout (stderr discarded) and whether it exited 0.
bool capture(const std::string& command, std::string* out) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe) return false;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out->append(buf, n);
  return pclose(pipe) == 0;
}

}  // namespace

bool ort_available(const std::string& dir, std::string* why) {
  std::string version;
  if (!capture("node --version", &version)) {
    *why = "Node.js (node) is not installed";
    return false;
  }
  if (!fs::exists(fs::path(dir) / "node_modules" / "onnxruntime-node")) {
    *why = "no node_modules/onnxruntime-node in it (npm install --ignore-scripts onnxruntime-node)";
    return false;
  }
  return true;
}

OrtResult run_ort(const std::string& dir, const fs::path& model, int runs) {
  OrtResult r;
  fs::path tmp = fs::temp_directory_path();
  fs::path script = tmp / fmt::format("eqfuse-bench-ort-{}.js", getpid());
  r.optimized = tmp / fmt::format("eqfuse-bench-ort-{}-{}.onnx", getpid(),
                                  model.parent_path().filename().string());
  std::ofstream(script) << kScript;
  std::string out;
  bool ok = capture(fmt::format("NODE_PATH={} node {} {} {} {} {}",
                                quote((fs::path(dir) / "node_modules").string()),
                                quote(script.string()), quote(fs::absolute(model).string()),
                                quote(r.optimized.string()), runs, twin_threads()),
                    &out);
  fs::remove(script);
  size_t line = out.rfind('{');
  nlohmann::json j =
      nlohmann::json::parse(line == std::string::npos ? "{}" : out.substr(line), nullptr, false);
  if (!ok || j.is_discarded() || !j.contains("ms")) {
    r.note = j.is_object() && j.contains("error") ? "ONNX Runtime: " + j["error"].get<std::string>()
                                                  : "ONNX Runtime did not run";
    fs::remove(r.optimized);
    return r;
  }
  r.ok = fs::exists(r.optimized);
  r.ms = j["ms"].get<double>();
  if (!r.ok) r.note = "ONNX Runtime wrote no optimized model";
  return r;
}

}  // namespace eqfuse::bench
