#!/usr/bin/env node
// Runs model fixtures on onnxruntime, the independent reference of seedance_model's tests
// (issue 37): for each MODEL_DIR in ONNX's conformance layout (model.onnx,
// test_data_set_0/input_N.pb), runs model.onnx with onnxruntime-node on the CPU (one intra-op
// thread, graph optimisations off, so that ORT runs each node as the file writes it) and writes
// the outputs, in the graph's output order, as TensorProtos to MODEL_DIR/ort/output_N.pb.
//
// Usage: node tools/model_fixtures/ort_run.js MODEL_DIR...
//        node tools/model_fixtures/ort_run.js --time ITERATIONS MODEL_DIR...
//        node tools/model_fixtures/ort_run.js --save-optimized LEVEL MODEL_DIR...
// With --save-optimized (basic, extended or all), onnxruntime optimises each model.onnx at that
// graph optimisation level on the CPU provider and saves what it made as MODEL_DIR/ort_LEVEL.onnx
// (nothing is run): the fused nodes `seedance model optimize` is compared with
// (tools/model_fixtures/rewrite_check.py).
// With --time, nothing is written: each model runs with onnxruntime's default graph
// optimisations (as users run it), one intra-op thread, ITERATIONS runs after a warm-up, five
// times, and the median time per run is printed ("ort_time: DIR MS"), for bench/model_speed.sh.
//
// onnxruntime-node comes from tools/install_onnxruntime.sh (tools/onnxruntime/node_modules).
// Node has no protobuf library at hand, so TensorProto is read and written by the few lines
// below (dims=1, data_type=2, float_data=4, int32_data=5, int64_data=7, name=8, raw_data=9,
// double_data=10, uint64_data=11; the other fields are skipped, external data is refused).
// Exit 2 on bad usage, 1 when onnxruntime-node is missing or a model fails.
'use strict';
const fs = require('fs');
const path = require('path');

function fail(message, code = 1) {
  process.stderr.write(`ort_run: ${message}\n`);
  process.exit(code);
}

let dirs = process.argv.slice(2);
let timeIterations = 0;
let saveLevel = '';
if (dirs[0] === '--save-optimized') {
  saveLevel = dirs[1];
  dirs = dirs.slice(2);
  if (!['basic', 'extended', 'all'].includes(saveLevel)) {
    fail('--save-optimized wants basic, extended or all', 2);
  }
} else if (dirs[0] === '--time') {
  timeIterations = Number(dirs[1]);
  dirs = dirs.slice(2);
  if (!Number.isInteger(timeIterations) || timeIterations < 1) {
    fail('--time wants a positive number of iterations', 2);
  }
}
if (dirs.length === 0 || dirs.some((d) => d.startsWith('-'))) {
  fail('usage: node ort_run.js [--time ITERATIONS | --save-optimized LEVEL] MODEL_DIR...', 2);
}

let ort;
try {
  ort = require(path.join(__dirname, '..', 'onnxruntime', 'node_modules', 'onnxruntime-node'));
} catch (error) {
  fail(`cannot load onnxruntime-node (run tools/install_onnxruntime.sh): ${error.message}`);
}

// ONNX TensorProto.DataType -> [ORT type name, typed array for raw_data].
const TYPES = {
  1: ['float32', Float32Array], 2: ['uint8', Uint8Array], 3: ['int8', Int8Array],
  4: ['uint16', Uint16Array], 5: ['int16', Int16Array], 6: ['int32', Int32Array],
  7: ['int64', BigInt64Array], 9: ['bool', Uint8Array], 10: ['float16', Uint16Array],
  11: ['float64', Float64Array], 12: ['uint32', Uint32Array], 13: ['uint64', BigUint64Array],
};
const ORT_TO_ONNX = Object.fromEntries(Object.entries(TYPES).map(([k, [t]]) => [t, Number(k)]));

// --- protobuf wire format: just what TensorProto needs ------------------------------------------

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (pos.i >= buf.length) throw new Error('truncated varint');
    const byte = buf[pos.i++];
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return value;
    shift += 7n;
    if (shift > 63n) throw new Error('varint longer than 10 bytes');
  }
}

function decodeTensor(buf, file) {
  const t = { dims: [], dataType: 0, name: '', raw: null, f32: [], i32: [], i64: [], f64: [] };
  const pos = { i: 0 };
  // A repeated field in either encoding: packed (wire type 2) or one value per tag.
  const repeated = (wire, readOne, out) => {
    if (wire !== 2) { out.push(readOne()); return; }
    const len = Number(readVarint(buf, pos));
    const end = pos.i + len;
    while (pos.i < end) out.push(readOne());
  };
  const fixed = (bytes, read) => () => {
    const v = read.call(buf, pos.i);
    pos.i += bytes;
    return v;
  };
  while (pos.i < buf.length) {
    const key = Number(readVarint(buf, pos));
    const field = key >>> 3;
    const wire = key & 7;
    const varint = () => readVarint(buf, pos);
    if (field === 1) repeated(wire, () => Number(BigInt.asIntN(64, varint())), t.dims);
    else if (field === 2 && wire === 0) t.dataType = Number(varint());
    else if (field === 4) repeated(wire, fixed(4, buf.readFloatLE), t.f32);
    else if (field === 5) repeated(wire, () => Number(BigInt.asIntN(32, varint())), t.i32);
    else if (field === 7) repeated(wire, () => BigInt.asIntN(64, varint()), t.i64);
    else if (field === 10) repeated(wire, fixed(8, buf.readDoubleLE), t.f64);
    else if (field === 11) repeated(wire, () => BigInt.asUintN(64, varint()), t.i64);
    else if ((field === 8 || field === 9) && wire === 2) {
      const len = Number(varint());
      const bytes = buf.subarray(pos.i, pos.i + len);
      pos.i += len;
      if (field === 8) t.name = bytes.toString('utf8');
      else t.raw = Buffer.from(bytes); // a copy: aligned for the typed array below
    } else if (field === 13 || field === 14) {
      throw new Error(`${file}: external data is not supported`);
    } else if (wire === 0) varint();
    else if (wire === 1) pos.i += 8;
    else if (wire === 5) pos.i += 4;
    else if (wire === 2) pos.i += Number(varint());
    else throw new Error(`${file}: unsupported wire type ${wire}`);
    if (pos.i > buf.length) throw new Error(`${file}: truncated TensorProto`);
  }
  const type = TYPES[t.dataType];
  if (!type) throw new Error(`${file}: unsupported data_type ${t.dataType}`);
  const [ortType, Arr] = type;
  const count = t.dims.reduce((a, b) => a * b, 1);
  let data;
  if (t.raw !== null) {
    if (t.raw.length !== count * Arr.BYTES_PER_ELEMENT) {
      throw new Error(`${file}: raw_data holds ${t.raw.length} bytes, dims ${t.dims} need ` +
                      `${count * Arr.BYTES_PER_ELEMENT}`);
    }
    data = new Arr(t.raw.buffer, t.raw.byteOffset, count);
  } else {
    const typed = t.f32.length ? t.f32 : t.i64.length ? t.i64 : t.f64.length ? t.f64 : t.i32;
    data = Arr.from(typed); // int32_data also carries the 8/16-bit types, bool and float16 bits
  }
  if (data.length !== count) {
    throw new Error(`${file}: ${data.length} values, dims ${JSON.stringify(t.dims)} need ${count}`);
  }
  return { name: t.name, tensor: new ort.Tensor(ortType, data, t.dims) };
}

function varintBytes(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const out = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}

function encodeTensor(name, tensor) {
  const dataType = ORT_TO_ONNX[tensor.type];
  if (!dataType) throw new Error(`output ${name}: unsupported ORT type ${tensor.type}`);
  const parts = [];
  for (const d of tensor.dims) parts.push(varintBytes(1 << 3), varintBytes(d)); // dims
  parts.push(varintBytes(2 << 3), varintBytes(dataType)); // data_type
  const nameBytes = Buffer.from(name, 'utf8');
  parts.push(varintBytes((8 << 3) | 2), varintBytes(nameBytes.length), nameBytes); // name
  const d = tensor.data;
  const raw = Buffer.from(d.buffer, d.byteOffset, d.byteLength);
  parts.push(varintBytes((9 << 3) | 2), varintBytes(raw.length), raw); // raw_data
  return Buffer.concat(parts);
}

// --- running ------------------------------------------------------------------------------------

async function saveOptimized(dir) {
  const modelPath = path.join(dir, 'model.onnx');
  if (!fs.existsSync(modelPath)) throw new Error(`${modelPath}: not found`);
  const out = path.join(dir, `ort_${saveLevel}.onnx`);
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    graphOptimizationLevel: saveLevel,
    optimizedModelFilePath: out,
  });
  await session.release();
  console.log(`ort_run: ${dir}: saved ${out}`);
}

async function runOne(dir) {
  if (saveLevel) return saveOptimized(dir);
  const modelPath = path.join(dir, 'model.onnx');
  const dataDir = path.join(dir, 'test_data_set_0');
  if (!fs.existsSync(modelPath)) throw new Error(`${modelPath}: not found`);
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: timeIterations > 0 ? 'all' : 'disabled',
  });
  const feeds = {};
  for (let i = 0; i < session.inputNames.length; i++) {
    const file = path.join(dataDir, `input_${i}.pb`);
    if (!fs.existsSync(file)) throw new Error(`${file}: not found (the model has ` +
                                              `${session.inputNames.length} inputs)`);
    const { name, tensor } = decodeTensor(fs.readFileSync(file), file);
    // Named inputs go by name, unnamed ones by position, as in ONNX's backend test.
    const key = name || session.inputNames[i];
    if (!session.inputNames.includes(key)) {
      throw new Error(`${file}: input ${key} is not among ${session.inputNames}`);
    }
    feeds[key] = tensor;
  }
  if (timeIterations > 0) {
    await session.run(feeds);  // warm-up
    const medians = [];
    for (let rep = 0; rep < 5; rep++) {
      const t0 = process.hrtime.bigint();
      for (let k = 0; k < timeIterations; k++) await session.run(feeds);
      medians.push(Number(process.hrtime.bigint() - t0) / 1e6 / timeIterations);
    }
    medians.sort((a, b) => a - b);
    console.log(`ort_time: ${dir} ${medians[2].toFixed(4)}`);
    await session.release();
    return;
  }
  const started = process.hrtime.bigint();
  const results = await session.run(feeds);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const outDir = path.join(dir, 'ort');
  fs.mkdirSync(outDir, { recursive: true });
  session.outputNames.forEach((name, i) => {
    fs.writeFileSync(path.join(outDir, `output_${i}.pb`), encodeTensor(name, results[name]));
  });
  await session.release();
  const shapes = session.outputNames.map((n) => `${n}[${results[n].dims}]`).join(' ');
  console.log(`ort_run: ${dir}: ${shapes} (${ms.toFixed(1)} ms)`);
}

(async () => {
  for (const dir of dirs) {
    try {
      await runOne(dir);
    } catch (error) {
      fail(`${dir}: ${error.message}`);
    }
  }
  console.log(`ort_run: onnxruntime-node ${ort.env.versions.node}, ${dirs.length} models`);
})();
