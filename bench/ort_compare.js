// node ort_compare.js ORIGINAL OPTIMIZED: runs both models in ONNX Runtime (CPU) on the same
// random inputs (floats in [-1, 1], integers 0/1, symbolic dims 1) and prints one JSON line:
// whether ONNX Runtime loads and runs the optimized model and the largest difference of its
// outputs from the original's (rtol 1e-3, atol 1e-4). A peer check: eqfuse never needs it.
const ort = require('onnxruntime-node');
let seed = 1234;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
(async () => {
  const [original, optimized] = process.argv.slice(2);
  const opts = { executionProviders: ['cpu'] };
  const a = await ort.InferenceSession.create(original, opts);
  const b = await ort.InferenceSession.create(optimized, opts);
  const feeds = {};
  for (const name of a.inputNames) {
    const meta = a.inputMetadata ? a.inputMetadata.find(m => m.name === name) : null;
    const dims = meta && meta.shape ? meta.shape.map(d => (typeof d === 'number' ? d : 1)) : [1];
    const type = meta && meta.type ? meta.type : 'float32';
    const n = dims.reduce((x, y) => x * y, 1);
    let data;
    if (type === 'int64') data = BigInt64Array.from({ length: n }, () => BigInt(rand() > 0 ? 1 : 0));
    else if (type === 'int32') data = Int32Array.from({ length: n }, () => (rand() > 0 ? 1 : 0));
    else data = Float32Array.from({ length: n }, rand);
    feeds[name] = new ort.Tensor(type, data, dims);
  }
  const ra = await a.run(feeds);
  const rb = await b.run(feeds);
  let worst = 0, ok = true;
  for (const name of Object.keys(ra)) {
    const x = ra[name].data, y = rb[name].data;
    for (let i = 0; i < x.length; ++i) {
      const d = Math.abs(Number(x[i]) - Number(y[i]));
      worst = Math.max(worst, d);
      if (d > 1e-4 + 1e-3 * Math.abs(Number(x[i]))) ok = false;
    }
  }
  console.log(JSON.stringify({ ok, max_abs_diff: worst, outputs: Object.keys(ra) }));
})().catch(e => { console.log(JSON.stringify({ ok: false, error: String(e) })); process.exit(1); });
