// ref_attention.cu - a hand-written, simple and correct attention forward
// kernel, used as a test fixture so the runtime (libflashrt, flash-run,
// python/flashc) can be proven on a GPU before the compiler emits kernels.
// Speed does not matter here; correctness and coverage of the metadata
// contract do (see docs/kernel-metadata.md and the .json beside each cubin).
//
// One thread per query row, BM rows per block, keys in tiles of BN through
// shared memory (dynamic, so D = 128 needs the >48 KiB opt-in). Online
// softmax in the exp2 domain with log2(e) folded into the scale, fp32
// accumulation, normalisation once at the end. Causal masking is
// bottom-right aligned (key j is visible to query i iff
// j <= i + seq_k - seq_q), so with seq_k < seq_q the first rows see no key:
// they get O = 0 and LSE = -inf.
//
// Compiled once per variant with:
//   -DREF_NAME=symbol -DREF_DTYPE=bf16|f16 -DREF_HEAD_DIM=64|128
//   -DREF_CAUSAL=0|1 -DREF_LSE=0|1 -DREF_TMA_PARAM=0|1
// REF_TMA_PARAM appends an (unused) CUtensorMap parameter over K so that
// the runtime's TMA encoding and 64-byte-aligned parameter packing run.

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef REF_NAME
#error "REF_NAME must be defined"
#endif
#ifndef REF_TMA_PARAM
#define REF_TMA_PARAM 0
#endif

#define REF_BF16 1
#define REF_F16 2
#define bf16 REF_BF16
#define f16 REF_F16
#if REF_DTYPE == REF_BF16
typedef __nv_bfloat16 elem_t;
__device__ inline float toFloat(elem_t x) { return __bfloat162float(x); }
__device__ inline elem_t fromFloat(float x) { return __float2bfloat16_rn(x); }
#else
typedef __half elem_t;
__device__ inline float toFloat(elem_t x) { return __half2float(x); }
__device__ inline elem_t fromFloat(float x) { return __float2half_rn(x); }
#endif
#undef bf16
#undef f16

constexpr int D = REF_HEAD_DIM;
constexpr int BM = 64; // query rows per block = threads per block
constexpr int BN = 32; // keys per tile

extern "C" __global__ void __launch_bounds__(BM)
    REF_NAME(const elem_t *__restrict__ q, const elem_t *__restrict__ k,
             const elem_t *__restrict__ v, elem_t *__restrict__ o,
#if REF_LSE
             float *__restrict__ lse,
#endif
             int seq_q, int seq_k, int heads, long long sqb, long long sqh,
             long long sqn, long long skb, long long skh, long long skn,
             long long svb, long long svh, long long svn, long long sob,
             long long soh, long long son,
#if REF_LSE
             long long slb, long long slh,
#endif
             float scale_log2
#if REF_TMA_PARAM
             ,
             const __grid_constant__ CUtensorMap k_desc
#endif
    ) {
  extern __shared__ float smem[];
  float *qs = smem + threadIdx.x * (D + 1); // own row, padded
  float *ks = smem + BM * (D + 1);          // [BN][D]
  float *vs = ks + BN * D;                  // [BN][D]
  float *ss = vs + BN * D + threadIdx.x * (BN + 1); // own logits

  const int bh = blockIdx.y;
  const int b = bh / heads, h = bh % heads;
  const int row = blockIdx.x * BM + threadIdx.x;
  const bool valid = row < seq_q;
  const elem_t *qb = q + b * sqb + h * sqh;
  const elem_t *kb = k + b * skb + h * skh;
  const elem_t *vb = v + b * svb + h * svh;

  if (valid)
    for (int d = 0; d < D; ++d)
      qs[d] = toFloat(qb[row * sqn + d]) * scale_log2;

  float acc[D];
#pragma unroll
  for (int d = 0; d < D; ++d)
    acc[d] = 0.f;
  float m = -INFINITY, l = 0.f;
  const int limit = row + seq_k - seq_q; // last visible key (causal)

  int kend = seq_k;
#if REF_CAUSAL
  {
    long long lastRow = (long long)blockIdx.x * BM + BM - 1;
    long long blockLimit = lastRow + seq_k - seq_q + 1;
    if (blockLimit < kend)
      kend = blockLimit < 0 ? 0 : (int)blockLimit;
  }
#endif

  for (int j0 = 0; j0 < kend; j0 += BN) {
    __syncthreads();
    for (int idx = threadIdx.x; idx < BN * D; idx += BM) {
      int jj = idx / D, d = idx % D, j = j0 + jj;
      ks[idx] = j < seq_k ? toFloat(kb[j * skn + d]) : 0.f;
      vs[idx] = j < seq_k ? toFloat(vb[j * svn + d]) : 0.f;
    }
    __syncthreads();
    if (!valid)
      continue;
    float tileMax = -INFINITY;
    for (int jj = 0; jj < BN; ++jj) {
      int j = j0 + jj;
      bool visible = j < seq_k;
#if REF_CAUSAL
      visible = visible && j <= limit;
#endif
      float x = -INFINITY;
      if (visible) {
        x = 0.f;
#pragma unroll 16
        for (int d = 0; d < D; ++d)
          x = fmaf(qs[d], ks[jj * D + d], x);
      }
      ss[jj] = x;
      tileMax = fmaxf(tileMax, x);
    }
    if (tileMax == -INFINITY)
      continue; // this row sees no key of this tile
    float mNew = fmaxf(m, tileMax);
    float alpha = exp2f(m - mNew); // 0 on the first visible tile
    l *= alpha;
#pragma unroll
    for (int d = 0; d < D; ++d)
      acc[d] *= alpha;
    for (int jj = 0; jj < BN; ++jj) {
      float p = exp2f(ss[jj] - mNew);
      l += p;
#pragma unroll
      for (int d = 0; d < D; ++d)
        acc[d] = fmaf(p, vs[jj * D + d], acc[d]);
    }
    m = mNew;
  }
  (void)limit;
  if (!valid)
    return;
  elem_t *ob = o + b * sob + h * soh + row * son;
  float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
  for (int d = 0; d < D; ++d)
    ob[d] = fromFloat(acc[d] * inv);
#if REF_LSE
  // LSE in natural-log units: (m + log2 l) / log2(e).
  lse[b * slb + h * slh + row] =
      l > 0.f ? (m + log2f(l)) * 0.69314718055994531f : -INFINITY;
#endif
#if REF_TMA_PARAM
  (void)k_desc;
#endif
}
