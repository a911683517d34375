#!/usr/bin/env python3
"""GPU test of python/flashc: flashc kernels on PyTorch tensors vs float64.

Usage: test_flashc.py KERNEL_DIR. Exits 77 (ctest: skipped) with a
"skipped: ..." line where torch, CUDA or a CUDA driver is missing.
"""
import glob
import json
import math
import os
import sys


def skip(why):
    print(f"skipped: {why}")
    sys.exit(77)


try:
    import torch
except ImportError:
    skip("no PyTorch")
if not torch.cuda.is_available():
    skip("no CUDA device visible to PyTorch")
if torch.cuda.get_device_capability() != (9, 0):
    skip("the test kernels are sm_90a cubins")

import flashc  # noqa: E402


def reference(q, k, v, scale, causal):
    """float64 softmax(scale q k^T) v and LSE, causal bottom-right aligned."""
    q, k, v = q.double(), k.double(), v.double()
    s = torch.einsum("bhid,bhjd->bhij", q, k) * scale
    nq, nk = q.shape[2], k.shape[2]
    if causal:
        i = torch.arange(nq, device=q.device)[:, None]
        j = torch.arange(nk, device=q.device)[None, :]
        s = s.masked_fill(j > i + nk - nq, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    return p @ v, lse


def rel_err(a, b):
    return ((a.double() - b).norm() / b.norm().clamp_min(1e-30)).item()


def takes_tile_counter(meta):
    return any(p.get("kind") == "tile_counter" for p in meta["params"])


def two_streams(meta_path, meta):
    """A kernel that claims tiles from a per-stream counter, launched on two
    streams at once, several times each: every launch's output must be
    whole. A counter shared between the streams, or one a launch leaves
    non-zero, would drop or repeat tiles."""
    kern = flashc.load(meta_path)
    dt = kern.dtype
    tol = 1e-2 if dt == torch.bfloat16 else 5e-3
    B, H, N, D = 4, 8, 1000, meta["head_dim"]  # 1000: a ragged last tile
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    inputs, outs = [], []
    for _ in streams:
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=dt)
                   for _ in range(3))
        q[:, :, 5::16] *= 300
        inputs.append((q, k, v))
        outs.append([])
    torch.cuda.synchronize()
    for _ in range(6):
        for i, s in enumerate(streams):
            with torch.cuda.stream(s):
                o = torch.full_like(inputs[i][0], float("nan"))
                res = kern(*inputs[i], out=o)
                outs[i].append(res[0] if kern.has_lse else res)
    torch.cuda.synchronize()
    ok = True
    worst = 0.0
    for i in range(2):
        ro, _ = reference(*inputs[i], kern.scale, kern.causal)
        for o in outs[i]:
            err = rel_err(o, ro)
            worst = max(worst, err)
            ok = ok and err <= tol and not torch.isnan(o).any()
    print(f"{kern.name} ({os.path.basename(meta_path)}), 2 streams x 6 "
          f"launches: worst rel err {worst:.2e} -> {'PASS' if ok else 'FAIL'}")
    return ok


def no_backward(kdir):
    """flashc has no backward pass: an output computed from inputs that
    require grad runs forward as usual, and a backward through O or LSE
    raises FlashcError instead of dropping attention's gradients."""
    kern = flashc.load(os.path.join(kdir, "ref_attention_bf16_d64_full.json"))
    q, k, v = (torch.randn(2, 3, 100, 64, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    o0, lse0 = kern(q, k, v)
    ok = o0.grad_fn is None and not o0.requires_grad
    results = []
    for name in ("q", "k", "v"):
        args = {"q": q, "k": k, "v": v}
        args[name] = args[name].detach().clone().requires_grad_()
        o, lse = kern(**args)
        same = torch.equal(o.detach(), o0) and torch.equal(lse.detach(), lse0)
        ok = ok and o.requires_grad and lse.requires_grad and same
        for what, loss in (("o", lambda: o.float().square().sum()),
                           ("lse", lambda: lse.sum())):
            try:
                loss().backward(retain_graph=True)
                results.append(f"{name}/{what}: no error")
                ok = False
            except RuntimeError as e:  # FlashcError is one
                good = (isinstance(e, flashc.FlashcError) and
                        "flashc has no backward pass yet" in str(e))
                ok = ok and good and args[name].grad is None
                results.append(f"{name}/{what}: " + (
                    "raised" if good else f"{type(e).__name__}: {e}"))
    with torch.no_grad():
        o, _ = kern(q.requires_grad_(), k, v)
    ok = ok and o.grad_fn is None
    torch.cuda.synchronize()
    print(f"no backward pass: {', '.join(results)} -> "
          f"{'PASS' if ok else 'FAIL'}")
    return ok


def main():
    kdir = sys.argv[1]
    failures = 0
    torch.manual_seed(0)
    for meta_path in sorted(glob.glob(os.path.join(kdir, "ref_attention_*.json"))):
        meta = json.load(open(meta_path))
        kern = flashc.load(meta_path)
        dt = kern.dtype
        tol = 1e-2 if dt == torch.bfloat16 else 5e-3
        B, H, NQ, NK, D = 2, 3, 190, 130, meta["head_dim"]
        q = torch.randn(B, H, NQ, D, device="cuda", dtype=dt)
        q[:, :, 3::16] *= 300  # rows with logits in the hundreds
        k = torch.randn(B, H, NK, D, device="cuda", dtype=dt)
        v = torch.randn(B, H, NK, D, device="cuda", dtype=dt)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):  # runs on torch's current stream
            res = kern(q, k, v)
        s.synchronize()
        o, lse = res if kern.has_lse else (res, None)
        ro, rlse = reference(q, k, v, kern.scale, kern.causal)
        err = rel_err(o, ro)
        ok = err <= tol and not torch.isnan(o).any()
        masked = torch.isinf(rlse)
        if lse is not None:
            fin = ~masked
            lerr = ((lse.double()[fin] - rlse[fin]).abs().max()).item()
            ok = ok and lerr <= tol and bool(torch.isneginf(lse[masked]).all())
        if masked.any():
            ok = ok and bool((o[masked] == 0).all())
        print(f"{kern.name}: rel err {err:.2e}, {int(masked.sum())} masked rows"
              f" -> {'PASS' if ok else 'FAIL'}")
        failures += not ok

    # Errors carry the runtime's message.
    kern = flashc.load(os.path.join(kdir, "ref_attention_bf16_d64_full.json"))
    q = torch.randn(1, 2, 64, 64, device="cuda", dtype=torch.bfloat16)
    cases = [
        ("head dim", lambda: kern(q[..., :32].contiguous(), q[..., :32].contiguous(),
                                  q[..., :32].contiguous())),
        ("contiguous", lambda: kern(q.transpose(-1, -2), q, q)),
        ("dtype f16", lambda: kern(q.half(), q, q)),
        ("seq_k = 0", lambda: kern(q, q[:, :, :0], q[:, :, :0])),
        ("does not match q", lambda: kern(q, q[:1, :1], q[:1, :1])),
        ("CUDA tensors", lambda: kern(q.cpu(), q, q)),
    ]
    for want, fn in cases:
        try:
            fn()
            print(f"error case '{want}': no error -> FAIL")
            failures += 1
        except flashc.FlashcError as e:
            ok = want in str(e)
            print(f"error case '{want}': {str(e).splitlines()[-1].strip()} -> "
                  f"{'PASS' if ok else 'FAIL'}")
            failures += not ok
    torch.cuda.synchronize()  # the GPU is still fine

    failures += not no_backward(kdir)

    counted = [p for p in sorted(glob.glob(os.path.join(kdir, "*.json")))
               if takes_tile_counter(json.load(open(p)))]
    for meta_path in counted[:3]:
        failures += not two_streams(meta_path, json.load(open(meta_path)))
    if not counted:
        print("no kernel here takes a tile counter: two-stream test not run")
    print("python flashc:", "PASS" if failures == 0 else f"{failures} FAIL")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
