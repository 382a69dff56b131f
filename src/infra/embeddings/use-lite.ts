/**
 * The Universal Sentence Encoder lite forward pass, written out over the weights of the package's
 * TensorFlow.js graph model (docs/embeddings.md, "Local model").
 *
 * Why not `GraphModel.executeAsync`: the graph runs ~250 small kernels per batch (shape arithmetic,
 * sparse-to-dense packing, per-op tensor bookkeeping) whose fixed cost was about as large as the
 * arithmetic for a one-sentence query. Here the ten dense products (the real work) run as fused
 * TensorFlow.js WASM matMuls over the tokens of every text of a batch at once (no padding), and the
 * rest — layer norms, attention within each text, pooling — as loops over Float32Arrays (a long
 * text's attention as tensor ops). Same model, same weights, same output (use-lite.test.ts compares
 * it with the graph on varied texts).
 *
 * The graph, read from model.json: token ids (the SentencePiece tokenizer's, at most 128 kept)
 * → twice the embedding (8002 × 256: the exported graph adds the looked-up vectors to the output of
 *   its AddTimingSignal step, which already holds them) + the sinusoidal timing signal (sin | cos,
 *   128 inverse timescales)
 * → layer 0 (pre-norm, width 256 → 512: 4 heads of 64, the residual widened by a dense 256 → 512)
 * → layer 1 (pre-norm, width 512: 4 heads of 128) → mean over tokens → dense 512 → 512, tanh
 * → L2 normalisation. Layer norm epsilon 1e-6; feed-forward 512 → 1536 (ReLU) → 512.
 */

/**
 * The part of TensorFlow.js used here (the instance bundled in @energetic-ai/core, whose type
 * declarations re-export an unbundled @tensorflow/tfjs-core that is not installed).
 */
export interface Tensor {
  readonly shape: number[];
  readonly rank: number;
  dataSync(): ArrayLike<number>;
  dispose(): void;
}
export interface Tf {
  tensor2d(values: Float32Array, shape: [number, number]): Tensor;
  reshape(x: Tensor, shape: number[]): Tensor;
  transpose(x: Tensor, perm: number[]): Tensor;
  split(x: Tensor, parts: number, axis: number): Tensor[];
  mul(x: Tensor, y: number): Tensor;
  softmax(x: Tensor): Tensor;
  matMul(a: Tensor, b: Tensor, transposeA?: boolean, transposeB?: boolean): Tensor;
  fused: { matMul(o: { a: Tensor; b: Tensor; bias: Tensor; activation: 'relu' | 'linear' }): Tensor };
  tidy(fn: () => void): void;
}

const P = 'module_apply_default/Encoder_en/KonaTransformer/';
const MAX_TOKENS = 128;
const EPS = 1e-6;
/** Texts of this many tokens or more get their attention as tensor ops (see attention()). */
const TENSOR_ATTENTION_FROM = 24;

interface Dense { w: Tensor; b: Tensor }
interface Norm { g: Float32Array; b: Float32Array }
interface Layer {
  width: number;
  heads: number;
  scale: number;
  attnNorm: Norm;
  qkv: Dense;
  out: Dense;
  ffnNorm: Norm;
  ffn1: Dense;
  ffn2: Dense;
  /** Layer 0 only: widens the residual from 256 to 512. */
  residual?: Dense;
}

export interface UseLite {
  /**
   * One L2-normalised 512-dimension vector per text, given as its token ids (the first 128 count).
   * The texts' tokens go through every dense product together; attention stays within each text.
   */
  embed(texts: readonly (readonly number[])[]): Float32Array[];
  dispose(): void;
}

/** Builds the forward pass from the loaded graph model's weights (`GraphModel.weights`). */
export function useLiteFrom(tf: Tf, weights: Record<string, Tensor[]>): UseLite {
  const owned: Tensor[] = [];
  const get = (name: string): Tensor => {
    const t = weights[name]?.[0];
    if (!t) throw new Error(`USE lite weight missing: ${name}`);
    return t;
  };
  const floats = (name: string) => get(name).dataSync() as Float32Array;
  const scalar = (name: string) => floats(name)[0];
  const dense = (w: string, b: string): Dense => {
    const t = get(w);
    const [rows, cols] = [t.shape[t.shape.length - 2], t.shape[t.shape.length - 1]];
    const w2 = t.rank === 2 ? t : tf.reshape(t, [rows, cols]);
    if (w2 !== t) owned.push(w2);
    return { w: w2, b: get(b) };
  };
  const norm = (base: string): Norm => ({
    g: floats(`${base}/layer_norm/layer_norm_scale/ConcatPartitions/concat`),
    b: floats(`${base}/layer_norm/layer_norm_bias/ConcatPartitions/concat`),
  });
  const layer = (i: 0 | 1, width: number): Layer => {
    const enc = `${P}Encode/Layer_${i}/TransformerLayer/`;
    const stack = `${P}Encode/TransformerStack/Layer_${i}/TransformerLayer/`;
    const kernel = `module/Encoder_en/KonaTransformer/Encode/Layer_${i}/TransformerLayer/MultiheadAttention/`;
    return {
      width,
      heads: 4,
      scale: scalar(`${stack}MultiheadAttention/mul/y`),
      attnNorm: norm(`${enc}layer_prepostprocess`),
      qkv: dense(`${kernel}qkv_transform_single/kernel/part_0`, `${enc}MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat`),
      out: dense(`${kernel}output_transform_single/kernel/part_0`, `${enc}MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat`),
      ffnNorm: norm(`${enc}FFN/layer_prepostprocess`),
      ffn1: dense(`${stack}FFN/conv1/Tensordot/Reshape_1`, `${enc}FFN/conv1/bias/ConcatPartitions/concat`),
      ffn2: dense(`${stack}FFN/conv2/Tensordot/Reshape_1`, `${enc}FFN/conv2/bias/ConcatPartitions/concat`),
      residual: i === 0 ? dense(`${enc}dense/kernel/ConcatPartitions/concat`, `${enc}dense/bias/ConcatPartitions/concat`) : undefined,
    };
  };

  const embedding = floats('module/Embeddings_en');
  const embDim = get('module/Embeddings_en').shape[1]!;
  const vocab = get('module/Embeddings_en').shape[0]!;
  const invTimescales = floats(`${P}Encode/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`);
  const layers = [layer(0, embDim), layer(1, 512)];
  const final = dense('module/Encoder_en/hidden_layers/tanh_layer_0/weights', 'module/Encoder_en/hidden_layers/tanh_layer_0/bias');
  if (invTimescales.length * 2 !== embDim) throw new Error('USE lite: timing signal does not match the embedding width');

  /** x (n × in) · W + b → n × out (ReLU applied when asked), one fused kernel on the WASM backend. */
  function matmul(x: Float32Array, n: number, d: Dense, relu = false): Float32Array {
    // Not tf.tidy(() => ….dataSync()): tidy walks what its callback returns looking for tensors, and
    // walking a typed array visits every element (~2 ms for 13 × 512).
    const a = tf.tensor2d(x, [n, x.length / n]);
    const prod = tf.fused.matMul({ a, b: d.w, bias: d.b, activation: relu ? 'relu' : 'linear' });
    const out = prod.dataSync() as Float32Array;
    a.dispose();
    prod.dispose();
    return out;
  }

  function layerNorm(x: Float32Array, n: number, width: number, p: Norm): Float32Array {
    const y = new Float32Array(x.length);
    for (let r = 0; r < n; r++) {
      const o = r * width;
      let mean = 0;
      for (let c = 0; c < width; c++) mean += x[o + c];
      mean /= width;
      let v = 0;
      for (let c = 0; c < width; c++) { const d = x[o + c] - mean; v += d * d; }
      const inv = 1 / Math.sqrt(v / width + EPS);
      for (let c = 0; c < width; c++) y[o + c] = (x[o + c] - mean) * inv * p.g[c] + p.b[c];
    }
    return y;
  }

  /**
   * Multi-head self-attention within each text: rows [seg[k], seg[k + 1]) of qkv (rows × 3·width)
   * belong to text k and attend only to each other (one text has no padding). A short text's
   * attention is a few thousand multiply-adds, cheaper in a loop than as tensor ops; from
   * TENSOR_ATTENTION_FROM tokens on, its n² work runs as WASM matMuls.
   */
  function attention(qkv: Float32Array, seg: readonly number[], l: Layer): Float32Array {
    const ctx = new Float32Array((qkv.length / (3 * l.width)) * l.width);
    for (let k = 0; k + 1 < seg.length; k++) {
      if (seg[k + 1] - seg[k] >= TENSOR_ATTENTION_FROM) tensorAttention(qkv, seg[k], seg[k + 1], l, ctx);
      else loopAttention(qkv, seg[k], seg[k + 1], l, ctx);
    }
    return ctx;
  }

  function loopAttention(qkv: Float32Array, from: number, to: number, l: Layer, ctx: Float32Array): void {
    const { width, heads, scale } = l;
    const hd = width / heads;
    const stride = 3 * width;
    const scores = new Float64Array(to - from);
    for (let h = 0; h < heads; h++) {
      const qo = h * hd;
      const ko = width + h * hd;
      const vo = 2 * width + h * hd;
      for (let i = from; i < to; i++) {
        let max = -Infinity;
        for (let j = from; j < to; j++) {
          let s = 0;
          for (let d = 0; d < hd; d++) s += qkv[i * stride + qo + d] * scale * qkv[j * stride + ko + d];
          scores[j - from] = s;
          if (s > max) max = s;
        }
        let sum = 0;
        for (let j = 0; j < to - from; j++) { scores[j] = Math.exp(scores[j] - max); sum += scores[j]; }
        const o = i * width + h * hd;
        for (let j = from; j < to; j++) {
          const p = scores[j - from] / sum;
          const vr = j * stride + vo;
          for (let d = 0; d < hd; d++) ctx[o + d] += p * qkv[vr + d];
        }
      }
    }
  }

  function tensorAttention(qkv: Float32Array, from: number, to: number, l: Layer, ctx: Float32Array): void {
    const { width, heads, scale } = l;
    const n = to - from;
    const hd = width / heads;
    tf.tidy(() => {
      const [q, k, v] = tf.split(tf.tensor2d(qkv.subarray(from * 3 * width, to * 3 * width), [n, 3 * width]), 3, 1);
      const split = (x: Tensor) => tf.transpose(tf.reshape(x, [n, heads, hd]), [1, 0, 2]);
      const weights = tf.softmax(tf.matMul(tf.mul(split(q), scale), split(k), false, true));
      const out = tf.transpose(tf.matMul(weights, split(v)), [1, 0, 2]);
      ctx.set(out.dataSync() as Float32Array, from * width);
    });
  }

  function addInPlace(a: Float32Array, b: Float32Array): Float32Array {
    for (let i = 0; i < a.length; i++) a[i] += b[i];
    return a;
  }

  /** One transformer layer over the rows of every text at once (all but attention work row by row). */
  function runLayer(x: Float32Array, seg: readonly number[], l: Layer): Float32Array {
    const n = seg[seg.length - 1];
    const residual = l.residual ? matmul(x, n, l.residual) : x;
    const qkv = matmul(layerNorm(x, n, l.width, l.attnNorm), n, l.qkv);
    const y = addInPlace(matmul(attention(qkv, seg, l), n, l.out), residual);
    const hidden = matmul(layerNorm(y, n, y.length / n, l.ffnNorm), n, l.ffn1, true);
    return addInPlace(matmul(hidden, n, l.ffn2), y);
  }

  return {
    embed(texts) {
      if (texts.length === 0) return [];
      const ids = texts.map((t) => (t.length > MAX_TOKENS ? t.slice(0, MAX_TOKENS) : t));
      const seg = [0];
      for (const t of ids) seg.push(seg[seg.length - 1] + t.length);
      const n = seg[seg.length - 1];
      const pooled = new Float32Array(ids.length * 512);
      if (n > 0) {
        const half = invTimescales.length;
        let x: Float32Array = new Float32Array(n * embDim);
        ids.forEach((tokens, k) => {
          tokens.forEach((id, t) => {
            if (!(Number.isInteger(id) && id >= 0 && id < vocab)) throw new Error(`USE lite: token id ${id} outside the vocabulary`);
            const o = (seg[k] + t) * embDim;
            const e = id * embDim;
            for (let c = 0; c < half; c++) {
              const angle = t * invTimescales[c];
              x[o + c] = 2 * embedding[e + c] + Math.fround(Math.sin(angle));
              x[o + half + c] = 2 * embedding[e + half + c] + Math.fround(Math.cos(angle));
            }
          });
        });
        for (const l of layers) x = runLayer(x, seg, l);
        // Mean over each text's tokens (a text without tokens pools to zeros, as the graph does).
        for (let k = 0; k < ids.length; k++) {
          const len = seg[k + 1] - seg[k];
          if (len === 0) continue;
          for (let r = seg[k]; r < seg[k + 1]; r++) for (let c = 0; c < 512; c++) pooled[k * 512 + c] += x[r * 512 + c];
          for (let c = 0; c < 512; c++) pooled[k * 512 + c] /= len;
        }
      }
      const v = matmul(pooled, ids.length, final);
      const out: Float32Array[] = [];
      for (let k = 0; k < ids.length; k++) {
        const row = new Float32Array(v.subarray(k * 512, (k + 1) * 512));
        let sq = 0;
        for (let c = 0; c < 512; c++) { row[c] = Math.tanh(row[c]); sq += row[c] * row[c]; }
        const inv = 1 / Math.sqrt(Math.max(sq, 1e-12));
        for (let c = 0; c < 512; c++) row[c] *= inv;
        out.push(row);
      }
      return out;
    },
    dispose() {
      for (const t of owned) t.dispose();
      owned.length = 0;
    },
  };
}
