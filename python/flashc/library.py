"""From a variant and a device to a kernel binary: the cache or a prebuilt
library. Pure Python (no torch).

A prebuilt library (`python -m flashc build-library DIR`) is a directory
with manifest.json and, per compiled config, <variant>/<key16>/kernel.cubin
+ kernel.json. The manifest lists, per variant, its default-config kernel
and the tuned kernels (gpu, arch, shape bucket) built from tuning
databases. A host without the compiler sets FLASHC_LIBRARY=DIR.
"""

import json
import os
import shutil
import sys

from . import FlashcError
from . import cache
from .variants import (Variant, canonical_config, find_tuning, parse_variant,
                       shipped_variants, default_tuning_dbs, load_tuning_db)

LIBRARY_FORMAT = "flashc-library"
MANIFEST = "manifest.json"


class MissingVariant(FlashcError):
    def __init__(self, message):
        super().__init__(None, message)


def resolve_config(variant, gpu, arch, bucket, dbs=None):
    """(config, tuning info or None): the tuning database's config for the
    GPU and shape bucket where an entry matches, else the shipped kernel's."""
    found = None
    if gpu is not None and bucket is not None:
        found = find_tuning(variant, gpu, arch, bucket, dbs)
    if found is None:
        return variant.default_config(), None
    path, entry = found
    info = {"tuning_db": path, "gpu": entry.get("gpu"),
            "shape": entry.get("shape"), "bucket": entry.get("bucket")}
    return dict(entry["config"]), info


def compile_variant(variant, config=None, arch="sm_90a", info=None,
                    toolchain=None):
    """Compiles (or finds in the cache) one variant with one config; returns
    (entry directory, compiled: bool)."""
    config = config or variant.default_config()
    source = variant.source(config)
    record = {"variant": variant.name, "tuning": info}
    return cache.get_entry(source, canonical_config(config), arch,
                           toolchain=toolchain, info=record)


# --- the prebuilt library ----------------------------------------------------

def build_command(variant_names, directory="DIR"):
    return (f"python -m flashc build-library {directory} --variants "
            + ",".join(variant_names))


def build_library(directory, variants=None, arch="sm_90a", dbs=None,
                  gpus=None, toolchain=None, log=None):
    """Compiles `variants` (default: the fourteen shipped ones, twelve dense
    and two packed-sequence ones: variants.shipped_variants) into
    `directory`: each variant's default config, and, for every entry of the
    tuning databases `dbs` for one of `gpus` (default: every GPU the
    databases name), the tuned config. Merges into an existing manifest.
    Returns the manifest."""
    variants = variants or shipped_variants()
    toolchain = toolchain or cache.Toolchain()
    os.makedirs(directory, exist_ok=True)
    mpath = os.path.join(directory, MANIFEST)
    manifest = read_manifest(directory) if os.path.exists(mpath) else None
    if manifest is None or manifest.get("arch") != arch:
        manifest = {"format": LIBRARY_FORMAT, "format_version": 1,
                    "arch": arch, "variants": {}}
    manifest["toolchain"] = toolchain.key_inputs()
    entries = []
    for path in (default_tuning_dbs() if dbs is None else dbs):
        entries += [(path, e) for e in load_tuning_db(path)]

    def add(variant, config, info):
        entry, _ = compile_variant(variant, config, arch, info, toolchain)
        key = os.path.basename(entry)
        rel = os.path.join(variant.name, key[:16])
        dest = os.path.join(directory, rel)
        if not os.path.isdir(dest):
            tmp = dest + ".tmp-%d" % os.getpid()
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            for f in (cache.BINARY, cache.METADATA, cache.SOURCE):
                with open(os.path.join(entry, f), "rb") as src:
                    cache.write_atomic(os.path.join(tmp, f), src.read())
            os.rename(tmp, dest)
        if log:
            log(f"{variant.name:28} {rel}"
                + (f"  (tuned: {info['gpu']} {info['bucket']})" if info else ""))
        return os.path.join(rel, cache.BINARY)

    for variant in variants:
        rec = {"default": add(variant, variant.default_config(), None),
               "tuned": []}
        for path, e in entries:
            if e.get("kernel") != variant.kernel_name or e.get("arch") != arch:
                continue
            if gpus is not None and e.get("gpu") not in gpus:
                continue
            info = {"tuning_db": path, "gpu": e.get("gpu"),
                    "shape": e.get("shape"), "bucket": e.get("bucket")}
            rec["tuned"].append({"gpu": e.get("gpu"), "bucket": e["bucket"],
                                 "binary": add(variant, e["config"], info)})
        manifest["variants"][variant.name] = rec
    cache.write_atomic(mpath, json.dumps(manifest, indent=2, sort_keys=True)
                       + "\n")
    return manifest


def read_manifest(directory):
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        raise FlashcError(None, f"FLASHC_LIBRARY={directory}: cannot read "
                          f"{MANIFEST}: {e}") from None
    if not isinstance(m, dict) or m.get("format") != LIBRARY_FORMAT:
        raise FlashcError(None, f"{path} is not a {LIBRARY_FORMAT} manifest")
    return m


_manifest_memo = {}


def library_kernel(directory, variant, arch, gpu, bucket):
    """The library's kernel.cubin for the variant (tuned for gpu and bucket
    where it has one), or raises MissingVariant."""
    mpath = os.path.join(directory, MANIFEST)
    try:
        st = os.stat(mpath)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    memo = _manifest_memo.get(directory)
    if memo is None or memo[0] != stamp:
        memo = (stamp, read_manifest(directory))
        _manifest_memo[directory] = memo
    manifest = memo[1]
    rec = manifest.get("variants", {}).get(variant.name)
    if rec is None or manifest.get("arch") != arch:
        have = ", ".join(sorted(manifest.get("variants", {}))) or "none"
        raise MissingVariant(
            f"flashc: the prebuilt library FLASHC_LIBRARY={directory} "
            f"(arch {manifest.get('arch')}) has no variant {variant.name} "
            f"for {arch} (it has: {have}), and no flashc compiler was "
            f"found to build it. On a host with the compiler, run:\n  "
            + build_command([variant.name], directory))
    for t in rec.get("tuned", []):
        if t.get("gpu") == gpu and t.get("bucket") == bucket:
            return os.path.join(directory, t["binary"])
    return os.path.join(directory, rec["default"])


def kernel_binary(variant, arch, gpu, bucket):
    """The kernel.cubin to load for the variant: FLASHC_LIBRARY's if set and
    it has the variant, else compiled through the cache (FLASHC_COMPILER);
    without either, MissingVariant names the variant and the command."""
    lib = os.environ.get("FLASHC_LIBRARY")
    missing = None
    if lib:
        try:
            return library_kernel(lib, variant, arch, gpu, bucket)
        except MissingVariant as e:
            missing = e
    try:
        toolchain = cache.Toolchain()
    except cache.CompileError as e:
        if missing is not None:
            raise missing from None
        raise MissingVariant(
            f"flashc: cannot build variant {variant.name}: {e}. Without the "
            "compiler, point FLASHC_LIBRARY at a prebuilt library that has "
            "it, built on a host with the compiler by:\n  "
            + build_command([variant.name])) from None
    config, info = resolve_config(variant, gpu, arch, bucket)
    entry, _ = compile_variant(variant, config, arch, info, toolchain)
    return os.path.join(entry, cache.BINARY)


def main(argv=None):
    import argparse
    p = argparse.ArgumentParser(prog="python -m flashc")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build-library", help="compile variants into DIR "
                       "(manifest.json + cubins) for FLASHC_LIBRARY")
    b.add_argument("dir")
    b.add_argument("--variants", action="append", default=None,
                   help="comma-separated names, e.g. bf16-d128-causal,"
                   "f16-d64-scale0.125,bf16-d128-causal-varlen,"
                   "bf16-d64-causal-alibi-sink,bf16-d128-causal-chunk8192,"
                   "bf16-d128-causal-document-backward (default: the 14 "
                   "shipped kernels)")
    b.add_argument("--arch", default="sm_90a")
    b.add_argument("--tuning-db", action="append", default=None,
                   help="also build its tuned configs (default: the "
                   "shipped bench/tuning/*.json or $FLASHC_TUNING_DB; "
                   "--tuning-db '' for none)")
    b.add_argument("--gpu", action="append", default=None,
                   help="only the tuning entries for this GPU name")
    v = sub.add_parser("variants", help="list the shipped variants")
    a = p.parse_args(argv)
    try:
        if a.cmd == "variants":
            for var in shipped_variants():
                print(var.name)
            return 0
        names = [n for arg in (a.variants or []) for n in arg.split(",") if n]
        variants = [parse_variant(n) for n in names] or None
        dbs = None if a.tuning_db is None else [d for d in a.tuning_db if d]
        m = build_library(a.dir, variants, a.arch, dbs, a.gpu, log=print)
        print(f"wrote {os.path.join(a.dir, MANIFEST)}: "
              f"{len(m['variants'])} variants")
        return 0
    except (FlashcError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
