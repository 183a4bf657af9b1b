// Times ONNX Runtime (CPU) on a model: node ort_bench.js MODEL THREADS ITERS [IDS]
// Inputs are random (int64 token ids below IDS, default 50000; floats in [-1, 1)).
const ort = require('onnxruntime-node');

async function main() {
  const [model, threads, iters, ids] = process.argv.slice(2);
  const idBound = Number(ids || 50000);
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all',
  });
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata ? session.inputMetadata.find(m => m.name === name) : null;
    const dims = meta && meta.shape ? meta.shape.map(d => (typeof d === 'number' ? d : 1)) : [1, 128];
    const n = dims.reduce((a, b) => a * b, 1);
    if (meta && meta.type === 'float32') {
      feeds[name] = new ort.Tensor('float32', Float32Array.from({length: n}, () => Math.random() * 2 - 1), dims);
    } else {
      feeds[name] = new ort.Tensor('int64', BigInt64Array.from({length: n}, () => BigInt(Math.floor(Math.random() * idBound))), dims);
    }
  }
  await session.run(feeds); // warm-up
  const times = [];
  for (let i = 0; i < Number(iters); ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(`median_ms: ${times[Math.floor(times.length / 2)].toFixed(3)}`);
}
main().catch(e => { console.error(e); process.exit(1); });
