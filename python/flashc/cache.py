"""The on-disk kernel cache: compile on first use through the flashc binary.

Pure Python (no torch). An entry is a directory <cache>/<key>/ holding
kernel.cubin (kernel.so for the CPU target), kernel.json (the kernel's
contract), source.mlir (what was compiled) and entry.json (this cache's
record: key inputs, config, the binary's size and sha256), written last.
The key is the sha256 of everything that changes the binary: the generated
source (which carries the config), the config, `flashc --version` and the
flashc binary's own sha256 (its --version names only LLVM's version),
`ptxas --version` (for the CPU target the linker's, `cc --version`), the
arch: an sm_* GPU arch, or CPU_ARCH for the CPU target (`flashc
--target=cpu`: the same tile program as a host shared library).

Writes are atomic: an entry is built in a temporary directory beside it,
every file fsynced, and renamed into place, so a reader sees a whole entry
or none. Builders of one key take a file lock (fcntl.flock on
<cache>/.locks/<key>), re-check, and build only if the entry is still
missing; an entry that fails validation (entry.json or kernel.json
unparsable, binary missing or of another size or hash) is moved aside and
rebuilt under the same lock. A valid entry is never removed, so a reader
never loses one it found. Where the filesystem refuses flock, builders go
on unlocked: each compiles into its own temporary directory, the first
rename wins (a directory is never replaced by a rename) and the others
take its entry.

Environment: FLASHC_CACHE_DIR (default ~/.cache/flashc), FLASHC_COMPILER
(the flashc binary; default: build/bin/flashc of this checkout, then PATH),
FLASHC_CUDA_ROOT (the CUDA toolkit whose ptxas is used; default CUDA_HOME,
CUDA_PATH, CUDA_ROOT, /usr/local/cuda, then ptxas on PATH), FLASHC_DUMP
(comma list of tile, mlir, llvm, ptx, or "all": also write those stages
beside the entry as kernel.tile.mlir, kernel.gpu.mlir, kernel.ll,
kernel.ptx; a CPU entry has no ptx and its lowered MLIR is kernel.cpu.mlir).
"""

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

CACHE_FORMAT = 1
BINARY = "kernel.cubin"
METADATA = "kernel.json"
ENTRY = "entry.json"
SOURCE = "source.mlir"
DUMP_FILES = {"tile": "kernel.tile.mlir", "mlir": "kernel.gpu.mlir",
              "llvm": "kernel.ll", "ptx": "kernel.ptx"}

# The CPU target: its arch in keys and entries, its binary and stages.
CPU_ARCH = "cpu"
CPU_BINARY = "kernel.so"
CPU_DUMP_FILES = {"tile": "kernel.tile.mlir", "mlir": "kernel.cpu.mlir",
                  "llvm": "kernel.ll"}


def is_cpu(arch):
    return arch == CPU_ARCH


def binary_name(arch):
    """The binary an entry for `arch` holds."""
    return CPU_BINARY if is_cpu(arch) else BINARY


def dump_files(arch):
    return CPU_DUMP_FILES if is_cpu(arch) else DUMP_FILES


from . import FlashcError


class CompileError(FlashcError):
    """The compiler is missing or failed (status None: no runtime call)."""

    def __init__(self, message):
        super().__init__(None, message)


# --- toolchain ---------------------------------------------------------------

def _repo_root():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


def find_compiler():
    """The flashc binary, or None: $FLASHC_COMPILER (which must exist;
    "none": no compiler, only FLASHC_LIBRARY), build*/bin/flashc of this
    checkout, flashc on PATH."""
    env = os.environ.get("FLASHC_COMPILER")
    if env == "none":
        return None
    if env:
        if not os.access(env, os.X_OK):
            raise CompileError(f"FLASHC_COMPILER={env} is not an executable")
        return env
    root = _repo_root()
    for build in ("build", "build-release"):
        p = os.path.join(root, build, "bin", "flashc")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("flashc")


def find_cuda_root():
    """(cuda root passed to flashc as --cuda-root, its ptxas), or (None,
    None)."""
    roots = [os.environ.get(v) for v in
             ("FLASHC_CUDA_ROOT", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
    roots.append("/usr/local/cuda")
    for r in roots:
        if r and os.access(os.path.join(r, "bin", "ptxas"), os.X_OK):
            return r, os.path.join(r, "bin", "ptxas")
    p = shutil.which("ptxas")
    if p:
        return os.path.dirname(os.path.dirname(os.path.realpath(p))), p
    return None, None


_tool_memo = {}


def _stamp(path):
    st = os.stat(path)
    return (os.path.realpath(path), st.st_mtime_ns, st.st_size)


def tool_version(path):
    """`path --version`'s output (memoized on the file's mtime and size)."""
    key = ("version",) + _stamp(path)
    if key not in _tool_memo:
        r = subprocess.run([path, "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        _tool_memo[key] = r.stdout.decode(errors="replace").strip()
    return _tool_memo[key]


def file_sha256(path):
    key = ("sha",) + _stamp(path)
    if key not in _tool_memo:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _tool_memo[key] = h.hexdigest()
    return _tool_memo[key]


class Toolchain:
    """The compiler and ptxas a key is computed for; with cpu=True the
    compiler and the C compiler driver flashc links the library with (cc on
    PATH, as flashc finds it) instead of ptxas."""

    def __init__(self, compiler=None, cuda_root=None, ptxas=None, cpu=False):
        self.compiler = compiler or find_compiler()
        if self.compiler is None:
            raise CompileError(
                "no flashc compiler found (set FLASHC_COMPILER, or build it "
                "with scripts/build.sh)")
        self.cpu = cpu
        if cpu:
            self.cuda_root, self.ptxas = None, None
            self.linker = shutil.which("cc")
            if self.linker is None:
                raise CompileError("no C compiler driver (cc) on PATH: flashc "
                                   "--target=cpu links the kernel's shared "
                                   "library with it")
            return
        self.linker = None
        if cuda_root is None:
            cuda_root, ptxas = find_cuda_root()
        elif ptxas is None:
            ptxas = os.path.join(cuda_root, "bin", "ptxas")
        if ptxas is None or not os.access(ptxas, os.X_OK):
            raise CompileError("ptxas not found (set FLASHC_CUDA_ROOT or "
                               "CUDA_HOME to the CUDA toolkit): flashc needs "
                               "it to write cubins")
        self.cuda_root, self.ptxas = cuda_root, ptxas

    def key_inputs(self):
        inputs = {"flashc_version": tool_version(self.compiler),
                  "flashc_sha256": file_sha256(self.compiler)}
        if self.cpu:
            inputs["cc_version"] = tool_version(self.linker)
        else:
            inputs["ptxas_version"] = tool_version(self.ptxas)
        return inputs


def cache_key(source, config, arch, toolchain_inputs):
    """The sha256 naming an entry; every argument changes it."""
    doc = {"cache_format": CACHE_FORMAT, "source": source,
           "config": dict(sorted(config.items())), "arch": arch,
           "toolchain": dict(sorted(toolchain_inputs.items()))}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def cache_dir():
    d = os.environ.get("FLASHC_CACHE_DIR")
    if d:
        return os.path.abspath(os.path.expanduser(d))
    return os.path.join(os.path.expanduser("~"), ".cache", "flashc")


def dump_stages(arch=None):
    """The stages FLASHC_DUMP asks for (those `arch`'s target has: a CPU
    entry has no PTX)."""
    raw = os.environ.get("FLASHC_DUMP", "").strip()
    if not raw or raw == "0":
        return []
    if raw in ("1", "all"):
        stages = list(DUMP_FILES)
    else:
        stages = [s.strip() for s in raw.split(",") if s.strip()]
    bad = [s for s in stages if s not in DUMP_FILES]
    if bad:
        raise CompileError(f"FLASHC_DUMP={raw}: unknown stage(s) "
                           f"{', '.join(bad)}; use {','.join(DUMP_FILES)} "
                           "or all")
    return [s for s in stages if s in dump_files(arch)]


# --- entries -----------------------------------------------------------------

def validate_entry(path, key=None, binary=None):
    """None if `path` holds a whole entry (for `key`, with the binary
    `binary`: kernel.cubin or kernel.so; default: the one entry.json
    names), else why not."""
    try:
        with open(os.path.join(path, ENTRY)) as f:
            entry = json.load(f)
    except FileNotFoundError:
        return f"{ENTRY} missing"
    except (OSError, ValueError) as e:
        return f"{ENTRY} unreadable: {e}"
    if not isinstance(entry, dict) or entry.get("format") != "flashc-cache-entry":
        return f"{ENTRY} is not a flashc cache entry"
    if key is not None and entry.get("key") != key:
        return f"{ENTRY} is for key {entry.get('key')}"
    name = binary or entry.get("binary")
    if name not in (BINARY, CPU_BINARY):
        return f"{ENTRY} names no kernel binary"
    if entry.get("binary") != name:
        return f"{ENTRY} names {entry.get('binary')}, not {name}"
    try:
        with open(os.path.join(path, METADATA)) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        return f"{METADATA} unreadable: {e}"
    if not isinstance(meta, dict) or meta.get("binary") != name:
        return f"{METADATA} does not name {name}"
    binary_path = os.path.join(path, name)
    try:
        size = os.path.getsize(binary_path)
    except OSError:
        return f"{name} missing"
    if size != entry.get("binary_size"):
        return f"{name} is {size} bytes, not {entry.get('binary_size')}"
    h = hashlib.sha256()
    with open(binary_path, "rb") as f:
        h.update(f.read())
    if h.hexdigest() != entry.get("binary_sha256"):
        return f"{name}'s sha256 differs from {ENTRY}'s"
    return None


def _fsync_file(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path):
    with contextlib.suppress(OSError):
        _fsync_file(path)


def write_atomic(path, data):
    """Writes bytes or str to path through a temporary file in the same
    directory, fsynced and renamed over it."""
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-" + os.path.basename(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(d)


@contextlib.contextmanager
def key_lock(root, key):
    import fcntl
    locks = os.path.join(root, ".locks")
    os.makedirs(locks, exist_ok=True)
    fd = os.open(os.path.join(locks, key), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        except OSError:
            locked = False  # a filesystem without locks: renames decide
        yield locked
    finally:
        os.close(fd)  # releases the lock


def _run(cmd, what):
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=900)
    except OSError as e:
        raise CompileError(f"{what}: cannot run {cmd[0]}: {e}") from None
    if r.returncode != 0:
        raise CompileError(
            f"{what} failed (exit {r.returncode}): {' '.join(cmd)}\n"
            + r.stderr.decode(errors="replace") + r.stdout.decode(errors="replace"))
    return r


def _flashc_cmd(toolchain, src, out, arch, emit):
    if is_cpu(arch):
        return [toolchain.compiler, src, "-o", out, f"--emit={emit}",
                "--target=cpu"]
    return [toolchain.compiler, src, "-o", out, f"--emit={emit}",
            f"--arch={arch}", f"--cuda-root={toolchain.cuda_root}"]


def _write_dumps(toolchain, entry_dir, src, arch, stages, scratch_parent):
    """Writes the FLASHC_DUMP stages missing from entry_dir (each file
    atomically; flashc --emit=ptx writes its own kernel.json, so each stage
    is compiled in a scratch directory and only the stage file moved)."""
    files = dump_files(arch)
    for stage in stages:
        dest = os.path.join(entry_dir, files[stage])
        if os.path.exists(dest):
            continue
        scratch = tempfile.mkdtemp(prefix=".dump-", dir=scratch_parent)
        try:
            out = os.path.join(scratch, files[stage])
            _run(_flashc_cmd(toolchain, src, out, arch, stage),
                 f"flashc --emit={stage}")
            with open(out, "rb") as f:
                write_atomic(dest, f.read())
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def get_entry(source, config, arch, toolchain=None, info=None, root=None):
    """The path of a valid cache entry for (source, config, arch), compiling
    it first if there is none. `info` (JSON-able) is recorded in entry.json.
    `arch` CPU_ARCH compiles for the CPU (`flashc --target=cpu`) with a
    Toolchain(cpu=True). Returns (path, compiled: bool)."""
    toolchain = toolchain or Toolchain(cpu=is_cpu(arch))
    if toolchain.cpu != is_cpu(arch):
        raise CompileError(f"arch {arch} with a toolchain for the "
                           f"{'CPU' if toolchain.cpu else 'GPU'}")
    root = root or cache_dir()
    stages = dump_stages(arch)
    binary = binary_name(arch)
    files = dump_files(arch)
    key = cache_key(source, config, arch, toolchain.key_inputs())
    path = os.path.join(root, key)
    if validate_entry(path, key, binary) is None and all(
            os.path.exists(os.path.join(path, files[s])) for s in stages):
        return path, False
    os.makedirs(root, exist_ok=True)
    with key_lock(root, key) as locked:
        if validate_entry(path, key, binary) is None:
            if stages:
                _write_dumps(toolchain, path, os.path.join(path, SOURCE), arch,
                             stages, root)
            return path, False
        # No entry, or a broken one: no other builder holds the lock, so any
        # temporary directory of this key is a dead process's.
        if locked:
            for name in os.listdir(root):
                if (name.startswith(f".tmp-{key}-")
                        or name.startswith(f".old-{key}-")):
                    _remove(os.path.join(root, name))
        if os.path.lexists(path) and validate_entry(path, key,
                                                    binary) is not None:
            aside = os.path.join(root, f".old-{key}-{uuid.uuid4().hex}")
            with contextlib.suppress(FileNotFoundError):  # unlocked racers
                os.rename(path, aside)
            _remove(aside)
        tmp = os.path.join(root, f".tmp-{key}-{os.getpid()}-{uuid.uuid4().hex}")
        os.makedirs(tmp)
        try:
            _build(toolchain, tmp, key, source, config, arch, info, stages, root)
            try:
                os.rename(tmp, path)
            except OSError:
                # Only without a working lock: another builder renamed its
                # entry into place first (a directory is not replaced).
                if validate_entry(path, key, binary) is not None:
                    raise
                _remove(tmp)
                return path, False
        except BaseException:
            _remove(tmp)
            raise
        _fsync_dir(root)
    return path, True


def _remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _build(toolchain, tmp, key, source, config, arch, info, stages, root):
    src = os.path.join(tmp, SOURCE)
    write_atomic(src, source)
    name = binary_name(arch)
    t0 = time.monotonic()
    _run(_flashc_cmd(toolchain, src, os.path.join(tmp, name), arch,
                     "so" if is_cpu(arch) else "cubin"), "flashc")
    seconds = time.monotonic() - t0
    binary = os.path.join(tmp, name)
    meta = os.path.join(tmp, METADATA)
    for p in (binary, meta):
        if not os.path.exists(p):
            raise CompileError(f"flashc wrote no {os.path.basename(p)}")
        _fsync_file(p)
    with open(meta) as f:
        json.load(f)  # a compiler that wrote half a file fails here
    _write_dumps(toolchain, tmp, src, arch, stages, root)
    with open(binary, "rb") as f:
        data = f.read()
    entry = {"format": "flashc-cache-entry", "format_version": CACHE_FORMAT,
             "key": key, "arch": arch, "config": config,
             "toolchain": toolchain.key_inputs(),
             "compiler": toolchain.compiler, "ptxas": toolchain.ptxas,
             "linker": toolchain.linker,
             "binary": name, "binary_size": len(data),
             "binary_sha256": hashlib.sha256(data).hexdigest(),
             "compile_seconds": round(seconds, 3), "info": info}
    write_atomic(os.path.join(tmp, ENTRY), json.dumps(entry, indent=2) + "\n")
    _fsync_dir(tmp)
