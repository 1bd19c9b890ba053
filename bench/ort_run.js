// node ort_run.js MODEL [OPTIMIZED_OUT]: loads MODEL in ONNX Runtime (CPU), runs it on zeros,
// and (with OPTIMIZED_OUT) saves ORT's own graph optimized at level "extended".
const ort = require('onnxruntime-node');
(async () => {
  const [model, optimized] = process.argv.slice(2);
  const opts = { executionProviders: ['cpu'], graphOptimizationLevel: 'extended' };
  if (optimized) opts.optimizedModelFilePath = optimized;
  const s = await ort.InferenceSession.create(model, opts);
  const feeds = {};
  for (const name of s.inputNames) {
    const meta = s.inputMetadata ? s.inputMetadata.find(m => m.name === name) : null;
    let dims = meta && meta.shape ? meta.shape.map(d => (typeof d === 'number' ? d : 1)) : [1];
    const type = meta && meta.type ? meta.type : 'float32';
    const n = dims.reduce((a, b) => a * b, 1);
    const data = type === 'int64' ? new BigInt64Array(n) : type === 'int32' ? new Int32Array(n) : new Float32Array(n);
    feeds[name] = new ort.Tensor(type, data, dims);
  }
  const t0 = process.hrtime.bigint();
  const out = await s.run(feeds);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(JSON.stringify({ ok: true, outputs: Object.keys(out), ms }));
})().catch(e => { console.log(JSON.stringify({ ok: false, error: String(e) })); process.exit(1); });
