"""Developer probe of the backward kernels on the GPU, before the runtime
launches them: loads a backward kernel.json's three launches with the CUDA
driver (ctypes), runs them on torch tensors, and checks dQ, dK and dV
against float64 autograd beside cuDNN's backward on the same inputs; with
--repeat it checks that the deterministic mode gives the same bits every
run, with --bench it times the three launches beside SDPA's backends.

    python3 bench/backward_probe.py DIR [--bench] [--repeat 20]

DIR holds <name>.cubin and <name>.json for each kernel to probe. The
runtime (libflashrt) is the user's path; this script exists to check the
compiler's kernels on their own, and reads only kernel.json's contract.
"""

import argparse
import ctypes
import glob
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the timing every bench script shares)

cuda = ctypes.CDLL("libcuda.so.1")


def check(status, what):
    if status != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(status, ctypes.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else status}")


class Launches:
    """The three kernels of one backward kernel.json, loaded."""

    def __init__(self, json_path):
        with open(json_path) as f:
            self.meta = json.load(f)
        binary = os.path.join(os.path.dirname(json_path), self.meta["binary"])
        with open(binary, "rb") as f:
            self.image = f.read()
        torch.zeros(1, device="cuda")  # the primary context, current
        self.module = ctypes.c_void_p()
        check(cuda.cuModuleLoadData(ctypes.byref(self.module), self.image),
              "cuModuleLoadData")
        self.functions = []
        for launch in self.meta["launches"]:
            fn = ctypes.c_void_p()
            check(cuda.cuModuleGetFunction(ctypes.byref(fn), self.module,
                                           launch["kernel"].encode()),
                  "cuModuleGetFunction " + launch["kernel"])
            smem = launch["shared_memory_bytes"]
            if smem > 48 * 1024:
                check(cuda.cuFuncSetAttribute(fn, 8, smem),
                      "max dynamic shared memory")
            self.functions.append(fn)

    def tensor_map(self, t):
        """A rank-4 map over t's [B, H, N, D] with its strides: 64 x 64 boxes,
        128-byte swizzle, zeros out of bounds (as the runtime encodes)."""
        storage = (ctypes.c_uint8 * 192)()
        addr = (ctypes.addressof(storage) + 63) // 64 * 64
        esize = t.element_size()
        dims = (ctypes.c_uint64 * 4)(t.shape[3], t.shape[2], t.shape[1], t.shape[0])
        strides = (ctypes.c_uint64 * 3)(t.stride(2) * esize, t.stride(1) * esize,
                                        t.stride(0) * esize)
        box = (ctypes.c_uint32 * 4)(64, 64, 1, 1)
        ones = (ctypes.c_uint32 * 4)(1, 1, 1, 1)
        dtype = 9 if t.dtype == torch.bfloat16 else 6
        check(cuda.cuTensorMapEncodeTiled(
            ctypes.c_void_p(addr), dtype, 4, ctypes.c_void_p(t.data_ptr()), dims,
            strides, box, ones, 0, 3, 3, 0), "cuTensorMapEncodeTiled")
        return (storage, ctypes.c_void_p(addr))

    def run(self, q, k, v, o, do, lse, dq, dk, dv, stream=None):
        """dq, dk, dv = backward(q, k, v, o, do, lse): B x H x N x D views."""
        B, H, NQ, D = q.shape
        NK = k.shape[2]
        tiles_q = (NQ + 63) // 64
        work = {
            "delta": torch.empty(B * H * NQ, device="cuda", dtype=torch.float32),
            "dq_accum": torch.empty(B * H * NQ * D, device="cuda",
                                    dtype=torch.float32),
            "dq_turns": torch.empty(B * H * tiles_q, device="cuda",
                                    dtype=torch.int32),
        }
        tensors = {"q": q, "k": k, "v": v, "o": o, "do": do, "lse": lse,
                   "dq": dq, "dk": dk, "dv": dv}
        values = {"seq_q": NQ, "seq_k": NK, "heads": H, "kv_group": H // k.shape[1],
                  "scale": self.meta["scale"],
                  "scale_log2": self.meta["scale"] * math.log2(math.e)}
        for name, t in tensors.items():
            if name != "lse":
                for dim, letter in enumerate("bhn"):
                    values[f"stride_{name}_{letter}"] = t.stride(dim)
        keep = []
        for fn, launch in zip(self.functions, self.meta["launches"]):
            args = []
            for p in launch["params"]:
                kind = p["kind"]
                if kind == "tma":
                    storage, addr = self.tensor_map(tensors[p["tensor"]])
                    keep.append(storage)
                    args.append(addr)
                    continue
                if kind == "ptr":
                    c = ctypes.c_uint64(tensors[p["tensor"]].data_ptr())
                elif kind == "workspace":
                    c = ctypes.c_uint64(work[p["name"]].data_ptr())
                elif kind == "i32":
                    c = ctypes.c_int32(values[p["value"]])
                elif kind == "i64":
                    c = ctypes.c_int64(values[p["value"]])
                elif kind == "f32":
                    c = ctypes.c_float(values[p["value"]])
                else:
                    raise ValueError(f"unknown param kind {kind}")
                keep.append(c)
                args.append(ctypes.cast(ctypes.pointer(c), ctypes.c_void_p))
            params = (ctypes.c_void_p * len(args))(*args)
            grid = launch["grid"]
            if grid["kind"] == "key_tiles":
                gx, gy = (NK + 63) // 64, B * k.shape[1]
                if grid.get("heads_fastest"):
                    gx, gy = gy, gx
            else:
                gx, gy = tiles_q, B * H
            check(cuda.cuLaunchKernel(
                fn, gx, gy, 1, launch["block"][0], 1, 1,
                launch["shared_memory_bytes"],
                ctypes.c_void_p(stream or torch.cuda.current_stream().cuda_stream),
                params, None), "cuLaunchKernel " + launch["kernel"])
        return keep, work


def forward64(q, k, v, scale, causal):
    """float64 O and natural-log LSE (fully masked rows: O = 0, LSE = -inf)."""
    s = torch.einsum("bhqd,bhkd->bhqk", q, k) * scale
    nq, nk = q.shape[2], k.shape[2]
    if causal:
        rows = torch.arange(nq, device=q.device)[:, None]
        cols = torch.arange(nk, device=q.device)[None, :]
        s = s.masked_fill(cols > rows + (nk - nq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def rel(x, ref):
    return ((x.double() - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def case(launches, B, H, HKV, NQ, NK, hot=False, seed=0):
    meta = launches.meta
    D, causal, scale = meta["head_dim"], meta["causal"], meta["scale"]
    dtype = torch.bfloat16 if meta["dtype"] == "bf16" else torch.float16
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, H, NQ, D, device="cuda", generator=g).to(dtype)
    k = torch.randn(B, HKV, NK, D, device="cuda", generator=g).to(dtype)
    v = torch.randn(B, HKV, NK, D, device="cuda", generator=g).to(dtype)
    do = torch.randn(B, H, NQ, D, device="cuda", generator=g).to(dtype)
    if hot:  # logits near 1e3 in a few rows
        q[:, :, ::97] *= 30
    group = H // HKV
    q64, k64, v64 = (x.double().requires_grad_() for x in (q, k, v))
    o64, lse64 = forward64(q64, k64.repeat_interleave(group, 1),
                           v64.repeat_interleave(group, 1), scale, causal)
    dq64, dk64, dv64 = torch.autograd.grad(o64, (q64, k64, v64), do.double())
    o = o64.detach().to(dtype)
    lse = lse64.detach().float().contiguous()
    dq, dk, dv = (torch.full_like(x, float("nan")) for x in (q, k, v))
    keep = launches.run(q, k, v, o, do, lse, dq, dk, dv)
    torch.cuda.synchronize()
    errs = [rel(dq, dq64), rel(dk, dk64), rel(dv, dv64)]
    # Where the exact gradient is 0 (one key: O = V, so dS = 0), a relative
    # error only measures rounding residue: take the absolute one there.
    absmax = [(x.double() - r).abs().max().item()
              for x, r in ((dq, dq64), (dk, dk64), (dv, dv64))]
    finite = all(torch.isfinite(x).all().item() for x in (dq, dk, dv))
    # cuDNN's backward on the same bf16 inputs, where SDPA offers it.
    cudnn = None
    if NQ == NK or not causal:
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            qc, kc, vc = (x.clone().requires_grad_() for x in (q, k, v))
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                oc = F.scaled_dot_product_attention(
                    qc, kc, vc, is_causal=causal, scale=scale,
                    enable_gqa=group > 1)
                grads = torch.autograd.grad(oc, (qc, kc, vc), do)
            cudnn = [rel(x, r) for x, r in zip(grads, (dq64, dk64, dv64))]
        except RuntimeError as e:
            cudnn = str(e).splitlines()[0][:60]
    return {"B": B, "H": H, "HKV": HKV, "NQ": NQ, "NK": NK, "hot": hot,
            "finite": finite, "rel_dq_dk_dv": errs, "abs_dq_dk_dv": absmax,
            "cudnn": cudnn,
            "tensors": (q, k, v, o, do, lse, dq, dk, dv)}


def timed(fn):
    """Median milliseconds of fn: compare.py's (triton's do_bench, or CUDA
    events after a warm-up)."""
    return compare.bench_fn(fn, rep_ms=100)


def bench(launches, B, H, N):
    meta = launches.meta
    D, causal, scale = meta["head_dim"], meta["causal"], meta["scale"]
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
                   for _ in range(4))
    o, lse = torch.ops.aten._scaled_dot_product_flash_attention(
        q, k, v, is_causal=causal, scale=scale)[:2]
    dq, dk, dv = (torch.empty_like(x) for x in (q, k, v))
    ms = timed(lambda: launches.run(q, k, v, o, do, lse, dq, dk, dv))
    flops = 2.5 * 4 * B * H * N * N * D / (2 if causal else 1)
    row = {"B": B, "H": H, "N": N, "D": D, "causal": causal,
           "deterministic": meta["deterministic"], "flashc_ms": ms,
           "flashc_tflops": flops / ms / 1e9}
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("fa2", SDPBackend.FLASH_ATTENTION)):
        qc, kc, vc = (x.clone().requires_grad_() for x in (q, k, v))
        with sdpa_kernel([backend]):
            oc = F.scaled_dot_product_attention(qc, kc, vc, is_causal=causal,
                                                scale=scale)
        ms_b = timed(lambda: torch.autograd.grad(oc, (qc, kc, vc), do,
                                                 retain_graph=True))
        row[name + "_ms"] = ms_b
        row[name + "_tflops"] = flops / ms_b / 1e9
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--bench", action="store_true")
    parser.add_argument("--repeat", type=int, default=0)
    parser.add_argument("--small", action="store_true",
                        help="one small case per kernel (for the sanitizers)")
    parser.add_argument("--only", default="",
                        help="probe only the kernels whose file name has this")
    parser.add_argument("--out")
    args = parser.parse_args()
    print(torch.cuda.get_device_name(), flush=True)
    results = []
    for path in sorted(glob.glob(os.path.join(args.dir, "*.json"))):
        if args.only not in os.path.basename(path):
            continue
        launches = Launches(path)
        meta = launches.meta
        name = os.path.basename(path)
        shapes = [] if args.bench else [(1, 2, 2, 200, 200, False)] if args.small else [
            (2, 4, 4, 1000, 1000, False), (2, 4, 4, 1000, 1000, True),
            (1, 8, 2, 555, 555, False), (1, 4, 1, 130, 130, True),
            (1, 2, 2, 300, 700, False), (1, 2, 2, 700, 300, False),
            (1, 2, 2, 1, 1, False), (1, 2, 2, 64, 128, False)]
        for B, H, HKV, NQ, NK, hot in shapes:
            r = case(launches, B, H, HKV, NQ, NK, hot)
            tensors = r.pop("tensors")
            ok = r["finite"] and all(
                e < 2e-2 or a < 1e-4
                for e, a in zip(r["rel_dq_dk_dv"], r["abs_dq_dk_dv"]))
            if args.repeat and meta["deterministic"]:
                dq0 = tensors[6].clone()
                same = 0
                for _ in range(args.repeat):
                    tensors[6].fill_(float("nan"))
                    launches.run(*tensors)
                    torch.cuda.synchronize()
                    same += int(torch.equal(tensors[6], dq0))
                r["bitwise_identical_runs"] = f"{same}/{args.repeat}"
                ok = ok and same == args.repeat
            r.update(kernel=name, ok=ok)
            print(json.dumps(r), flush=True)
            results.append(r)
        if args.bench:
            for N in (1024, 4096, 16384):
                row = bench(launches, 16384 // N * 2 // 2, 16 if meta["head_dim"] == 128 else 32, N)
                row["kernel"] = name
                print(json.dumps(row), flush=True)
                results.append(row)
    compare.finish_probe(results, args.out)


if __name__ == "__main__":
    main()
