// A small writer for the ONNX model format: just enough of the protobuf wire format and of the
// ONNX messages (field numbers from onnx/onnx.proto3) to write a graph of standard operators with
// its weights as initializers. Only writing is supported; onnxruntime reads the result.
//
// Protobuf wire format in brief: each field is a key varint (field_number << 3 | wire_type)
// followed by its value; wire type 0 is a varint, 2 is length-delimited (strings, bytes, nested
// messages, packed repeated numbers), 5 is a 4-byte little-endian value (float).

const utf8 = new TextEncoder();

// Accumulates the bytes of one message.
class Writer {
  constructor() {
    this.parts = [];
  }

  raw(bytes) {
    this.parts.push(bytes);
    return this;
  }

  // Unsigned LEB128; negative int64 values become their 64-bit two's complement (10 bytes), as
  // protobuf encodes int64.
  varint(n) {
    let v = BigInt.asUintN(64, BigInt(n));
    const out = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    return this.raw(Uint8Array.from(out));
  }

  key(field, wireType) {
    return this.varint((field << 3) | wireType);
  }

  int(field, n) {
    return this.key(field, 0).varint(n);
  }

  float(field, x) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, x, true);
    return this.key(field, 5).raw(b);
  }

  bytes(field, bytes) {
    return this.key(field, 2).varint(bytes.length).raw(bytes);
  }

  string(field, s) {
    return this.bytes(field, utf8.encode(s));
  }

  // A nested message (given as its encoded bytes).
  message(field, bytes) {
    return this.bytes(field, bytes);
  }

  // A packed repeated integer field.
  packedInts(field, values) {
    const inner = new Writer();
    for (const v of values) inner.varint(v);
    return this.bytes(field, inner.finish());
  }

  finish() {
    const len = this.parts.reduce((n, p) => n + p.length, 0);
    const out = new Uint8Array(len);
    let at = 0;
    for (const p of this.parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
}

// TensorProto.DataType values used here.
export const DataType = { FLOAT: 1, INT64: 7 };

// AttributeProto.AttributeType values used here.
const AttrType = { FLOAT: 1, INT: 2, INTS: 7 };

// TensorProto: dims = 1, data_type = 2, name = 8, raw_data = 9 (little-endian element bytes).
// `data` is a Float32Array (FLOAT) or BigInt64Array (INT64); the machine is little-endian, as
// every platform node runs WebAssembly on.
export function tensor(name, dataType, dims, data) {
  const w = new Writer();
  if (dims.length) w.packedInts(1, dims);
  w.int(2, dataType).string(8, name);
  w.bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return w.finish();
}

// AttributeProto: name = 1, f = 2, i = 3, ints = 8, type = 20. The kind follows the JS value:
// an integer number -> INT, a non-integer number -> FLOAT, an array of integers -> INTS.
// Use {float: x} to force a FLOAT attribute whose value happens to be an integer.
function attribute(name, value) {
  const w = new Writer().string(1, name);
  if (Array.isArray(value)) w.packedInts(8, value).int(20, AttrType.INTS);
  else if (typeof value === 'object' && 'float' in value) w.float(2, value.float).int(20, AttrType.FLOAT);
  else if (Number.isInteger(value)) w.int(3, value).int(20, AttrType.INT);
  else w.float(2, value).int(20, AttrType.FLOAT);
  return w.finish();
}

// NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5.
export function node(opType, inputs, outputs, attrs = {}, name = '') {
  const w = new Writer();
  for (const i of inputs) w.string(1, i);
  for (const o of outputs) w.string(2, o);
  if (name) w.string(3, name);
  w.string(4, opType);
  for (const [k, v] of Object.entries(attrs)) w.message(5, attribute(k, v));
  return w.finish();
}

// ValueInfoProto (name = 1, type = 2) of a tensor with a fixed shape:
// TypeProto.tensor_type = 1 -> Tensor {elem_type = 1, shape = 2} -> TensorShapeProto {dim = 1}
// -> Dimension {dim_value = 1}.
export function valueInfo(name, elemType, dims) {
  const shape = new Writer();
  for (const d of dims) shape.message(1, new Writer().int(1, d).finish());
  const tensorType = new Writer().int(1, elemType).message(2, shape.finish()).finish();
  const type = new Writer().message(1, tensorType).finish();
  return new Writer().string(1, name).message(2, type).finish();
}

// GraphProto: node = 1, name = 2, initializer = 5, input = 11, output = 12.
export function graph({ name, nodes, initializers, inputs, outputs }) {
  const w = new Writer();
  for (const n of nodes) w.message(1, n);
  w.string(2, name);
  for (const t of initializers) w.message(5, t);
  for (const i of inputs) w.message(11, i);
  for (const o of outputs) w.message(12, o);
  return w.finish();
}

// ModelProto: ir_version = 1, producer_name = 2, graph = 7, opset_import = 8
// (OperatorSetIdProto: domain = 1, version = 2; the default domain is left empty).
export function model({ graph: g, irVersion, opset, producer }) {
  return new Writer()
    .int(1, irVersion)
    .string(2, producer)
    .message(7, g)
    .message(8, new Writer().int(2, opset).finish())
    .finish();
}
