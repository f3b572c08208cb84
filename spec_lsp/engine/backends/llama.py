"""The only module that touches llama-cpp-python (private attributes included).

Loads a GGUF with `Llama` (weights, context, tokenizer), then drives `llama_decode` directly with
its own batch so logits are computed only for the rows the decode loop asks for (no
`logits_all`), and trims the KV cache with `llama_memory_seq_rm` when drafts are rejected.

Longer than most modules by design: it is the one place of the package that may import
llama_cpp, so the memory checks, the build's diagnostics (doctor) and the crash probe's child
live here too. (The benchmarks' plain llama-cpp-python baseline is theirs: bench/baseline.py.)
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import io
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")
GPU_BACKENDS = ("cuda", "hip", "musa", "vulkan", "sycl")  # ggml's libraries: libggml-<name>.so


def library_files() -> list[Path]:
    """llama-cpp-python's native libraries (libllama, libggml*), found without importing it:
    what a rebuild replaces, so their identity names the build."""
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return []
    package = Path(next(iter(spec.submodule_search_locations)))
    return sorted(
        file
        for file in package.rglob("*")
        if file.is_file() and any(s in file.name for s in LIBRARY_SUFFIXES)
    )


def gpu_build(libraries: Iterable[Path]) -> bool:
    """Whether these native libraries (`library_files()`) include a GPU backend's."""
    return any(f"ggml-{name}" in file.name for file in libraries for name in GPU_BACKENDS)


def load_library_first() -> None:
    """Load llama.cpp's libraries into this process before numpy's, in a GPU build.

    With numpy's wheel (and its OpenBLAS) loaded first, a CUDA build of llama-cpp-python 0.3.36
    segfaulted loading any model: 14 of 14 tries on an H200, `gpuLayers` 0 and -1; 0 of 32 with
    llama_cpp imported first (bench/results/gpu-loop-h200.md). A CPU build never crashed so. The
    processes that load models import this module before anything imports numpy (the command
    line through `spec_lsp.engine.prepare_process`, the benchmarks, the crash probe's child), and
    this runs as the module is imported, before its own numpy. A library that cannot even load
    on this machine (built for another CPU) must not take this process with it: a child loads it
    first, and if it fails nothing is done here (the crash probe then finds and names it)."""
    import subprocess
    import sys

    if "numpy" in sys.modules or not gpu_build(library_files()):
        return
    try:
        child = subprocess.run(
            [sys.executable, "-c", "import llama_cpp"], capture_output=True, timeout=120
        )
    except (OSError, subprocess.SubprocessError):
        return
    if child.returncode == 0:
        import llama_cpp  # noqa: F401  (its package loads the libraries before its numpy)


load_library_first()

import numpy as np  # noqa: E402

from spec_lsp.engine.backends import threads as cpu_threads  # noqa: E402
from spec_lsp.engine.backends.base import (  # noqa: E402
    Aborted,
    ModelInfo,
    Run,
    Snapshot,
    check_model_file,
)
from spec_lsp.engine.types import CancelToken, EngineError  # noqa: E402

log = logging.getLogger(__name__)

ABORTED = 2  # llama_decode's return code when its abort callback said stop
_LOG_CALLBACK: list[Any] = []  # (kept alive: llama.cpp holds a pointer to it)


def _abort_reader() -> int | None:
    """The address of C's `strlen`, used as llama.cpp's abort callback on a 2-byte flag buffer:
    it returns 1 (stop) once the flag's first byte is set, else 0, in the register a `bool`
    is returned in, and never takes Python's GIL. A Python callback took the GIL at each of
    llama.cpp's ~110 polls a second: with another Python thread busy, a prompt evaluated at
    14 tok/s instead of 43. None where no C library is found (a Python callback then)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        return ctypes.cast(libc.strlen, ctypes.c_void_p).value
    except (OSError, AttributeError, TypeError):
        return None


def _route_llama_log(llama_cpp: Any) -> None:
    """llama.cpp's own messages to this module's logger at debug level, once loaded (loading
    keeps llama-cpp-python's, whose output is captured). Its callback writes errors to stderr
    even when quiet, and an aborted decode (a cancelled prompt) logs one as routine."""
    if _LOG_CALLBACK:
        return

    def forward(_level: int, text: bytes, _data: object) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("llama.cpp: %s", text.decode("utf-8", errors="replace").rstrip())

    _LOG_CALLBACK.append(llama_cpp.llama_log_callback(forward))
    llama_cpp.llama_log_set(_LOG_CALLBACK[0], ctypes.c_void_p(0))


SPECIAL_ROLES = (
    "bos",
    "eos",
    "eot",
    "fim_pre",
    "fim_suf",
    "fim_mid",
    "fim_pad",
    "fim_rep",
    "fim_sep",
)


class LlamaModel:
    """One GGUF model with one KV sequence, driven token by token."""

    def __init__(
        self,
        path: str,
        *,
        n_ctx: int,
        threads: int | None = None,
        gpu_layers: int = 0,
        n_batch: int = 512,
        what: str = "model",
    ) -> None:
        import llama_cpp

        self._lib = llama_cpp
        file = check_model_file(path, what=what)
        # unset: as many as other programs leave free, looked at before each decode (threads.py)
        self._chooser = None if threads else cpu_threads.SHARED
        threads = threads or (self._chooser.choose() if self._chooser else 1)
        fix_malloc_threshold()
        if gpu_layers == 0:
            check_context_fits(file, n_ctx, what=what)
        try:
            # verbose=False would make llama-cpp-python dup2 stdout to /dev/null while it loads:
            # in a language server that silently drops protocol messages written meanwhile by
            # the event loop. Load verbosely with Python's stderr captured, then quieten.
            with contextlib.redirect_stderr(io.StringIO()):
                self._llm: Any = llama_cpp.Llama(
                    model_path=str(file),
                    n_ctx=n_ctx,
                    n_batch=n_batch,
                    n_ubatch=n_batch,
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_gpu_layers=gpu_layers,
                    logits_all=False,
                    # Read the weights into memory rather than mapping the file: a mapped file
                    # that is truncated or overwritten in place (cp, curl -o) kills the process
                    # with SIGBUS at the next decode. (RSS is no higher: llama.cpp repacks most
                    # CPU weights into memory of its own anyway.)
                    use_mmap=False,
                    verbose=True,
                )
            from llama_cpp._logger import set_verbose

            set_verbose(False)
        except (ValueError, RuntimeError) as exc:
            if "context" in str(exc):  # the weights loaded; the KV cache did not fit
                raise EngineError(
                    f"not enough memory for a {n_ctx}-token context for {what} {file} ({exc}): "
                    f"lower `contextSize` (now {n_ctx})."
                ) from exc
            raise EngineError(
                f"llama.cpp could not load {what} {file} ({exc}): the file is truncated, corrupt "
                "or of an architecture this llama.cpp does not support. Pull it again "
                f"(`spec-lsp models pull`) or set `{what}` to another GGUF file."
            ) from exc
        _route_llama_log(llama_cpp)
        self._ctx = self._llm._ctx.ctx
        self._model = self._llm._model.model
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self._n_vocab = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self._n_batch = n_batch
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        # (its arrays, allocated once: reading a field builds a new pointer object each time)
        b = self._batch
        self._batch_fields = (b.token, b.pos, b.n_seq_id, b.seq_id, b.logits)
        # what llama.cpp polls while it computes an abortable batch (see _abort_reader)
        self._abort_flag = ctypes.create_string_buffer(2)  # [0] set when the call's token fires
        reader = _abort_reader()
        if reader is not None:
            self._abort_callback = llama_cpp.ggml_abort_callback(reader)
            self._abort_data: int | None = ctypes.addressof(self._abort_flag)
        else:  # (a Python callback: each poll takes the GIL)
            flag = self._abort_flag
            self._abort_callback = llama_cpp.ggml_abort_callback(lambda _data: flag.raw[0] != 0)
            self._abort_data = None
        self._no_abort = llama_cpp.ggml_abort_callback()  # (a null pointer: no callback)
        self._tokens: list[int] = []
        self._pieces: dict[int, bytes] = {}
        self.shift_min = 0  # (the engine sets it from `kvShift`)
        self.moved = 0
        self.threads = threads
        self.info = self._read_info(file)

    # -- the ModelBackend protocol ------------------------------------------------------------
    @property
    def tokens(self) -> list[int]:
        return self._tokens

    @property
    def n_ctx(self) -> int:
        return int(self._lib.llama_n_ctx(self._ctx))

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        if not text:
            return []
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def token_bytes(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._piece(token)
            self._pieces[token] = piece
        return piece

    def evaluate(
        self,
        tokens: Sequence[int],
        *,
        logits_from: int,
        abort: CancelToken | None = None,
        view: bool = False,
    ) -> np.ndarray:
        if len(self._tokens) + len(tokens) > self.n_ctx:
            raise EngineError(
                f"the prompt and completion need {len(self._tokens) + len(tokens)} tokens but the "
                f"context holds {self.n_ctx}: raise `contextSize` or lower `prefixTokens`."
            )
        rows: list[np.ndarray] = []
        for start in range(0, len(tokens), self._n_batch):
            chunk = tokens[start : start + self._n_batch]
            n_out = self._fill_batch(chunk, start, logits_from)
            self._follow_free_cores()
            rc = self._decode(abort)
            if rc == ABORTED:
                self._forget_after(len(self._tokens))
                raise Aborted("aborted while the model computed")
            if rc != 0:
                raise EngineError(
                    f"llama_decode failed (code {rc}) at position {len(self._tokens)}"
                )
            self._tokens.extend(chunk)
            if n_out:
                block = self._logits(n_out)
                alone = view and len(tokens) <= self._n_batch
                rows.append(block if alone else block.copy())
        if len(rows) == 1:  # (one chunk: no second copy)
            return rows[0]
        return np.concatenate(rows) if rows else np.zeros((0, self._n_vocab), dtype=np.float32)

    def _logits(self, n_out: int) -> np.ndarray:
        """The last decode's n_out rows of logits, a read-only view of llama.cpp's buffer."""
        size = n_out * self._n_vocab
        address = ctypes.cast(self._lib.llama_get_logits(self._ctx), ctypes.c_void_p).value
        buffer = (ctypes.c_float * size).from_address(address or 0)
        flat = np.frombuffer(memoryview(buffer), np.float32)  # type: ignore[arg-type]
        flat.flags.writeable = False
        return flat.reshape(n_out, self._n_vocab)

    def _decode(self, abort: CancelToken | None) -> int:
        if abort is None:
            return int(self._lib.llama_decode(self._ctx, self._batch))
        flag = self._abort_flag
        flag[0] = b"\0"
        remove = abort.on_cancel(self._raise_abort_flag)  # (at once if it has fired)
        try:
            if flag[0] != b"\0":
                return ABORTED
            self._lib.llama_set_abort_callback(self._ctx, self._abort_callback, self._abort_data)
            try:
                return int(self._lib.llama_decode(self._ctx, self._batch))
            finally:
                self._lib.llama_set_abort_callback(self._ctx, self._no_abort, None)
        finally:
            remove()

    def _raise_abort_flag(self) -> None:  # (on the cancelling thread)
        self._abort_flag[0] = b"\1"

    def _forget_after(self, n_keep: int) -> None:
        """After an aborted decode: llama.cpp drops the stopped batch's entries itself; make
        sure nothing past what `tokens` says is left."""
        memory = self._lib.llama_get_memory(self._ctx)
        if not self._lib.llama_memory_seq_rm(memory, 0, n_keep, -1):
            self._lib.llama_memory_clear(memory, True)
            self._tokens = []

    def _follow_free_cores(self) -> None:
        if self._chooser is None:
            return
        threads = self._chooser.choose()
        if threads != self.threads:
            self._lib.llama_set_n_threads(self._ctx, threads, threads)
            log.debug(
                "%s: %d threads (other programs busy on %.1f cores)",
                self.info.name,
                threads,
                self._chooser.others,
            )
            self.threads = threads

    def truncate(self, n_keep: int) -> None:
        if n_keep >= len(self._tokens):
            return
        memory = self._lib.llama_get_memory(self._ctx)
        if not self._lib.llama_memory_seq_rm(memory, 0, n_keep, -1):
            self._lib.llama_memory_clear(memory, True)  # partial removal refused: start over
            n_keep = 0
        del self._tokens[n_keep:]

    def move_back(self, keep: int, runs: Sequence[Run]) -> int:
        memory = self._lib.llama_get_memory(self._ctx)
        held = self._tokens[:keep]
        for start, at, n in runs:
            # (what lies between goes; the run's positions move back by the gap)
            if not self._lib.llama_memory_seq_rm(memory, 0, at, start):
                break
            self._lib.llama_memory_seq_add(memory, 0, start, start + n, at - start)
            held += self._tokens[start : start + n]
            self.moved += n
        if not self._lib.llama_memory_seq_rm(memory, 0, len(held), -1):
            self._lib.llama_memory_clear(memory, True)  # partial removal refused: start over
            held = []
        self._tokens = held
        return len(held)

    def swap_tail(self, keep: int, n: int) -> None:
        memory, add = self._lib.llama_get_memory(self._ctx), self._lib.llama_memory_seq_add
        end = len(self._tokens)
        rest = end - keep - n
        # (three shifts, the run parked beyond the end first: ranges never overlap; llama.cpp
        # adds them up and rotates each key once, at the next evaluation)
        add(memory, 0, keep, keep + n, end)
        add(memory, 0, keep + n, end, -n)
        add(memory, 0, keep + end, keep + n + end, rest - end)
        self._tokens = (
            self._tokens[:keep] + self._tokens[keep + n :] + self._tokens[keep : keep + n]
        )
        self.moved += n

    def save_state(self) -> Snapshot:
        # straight into a bytearray: a ctypes array copied out with bytes() took 0.4 s for the
        # 86 MB of a 3,000-token Qwen-1.5B cache, llama.cpp's own copy 0.013 s
        lib = self._lib
        size = int(lib.llama_state_seq_get_size(self._ctx, 0))
        data = bytearray(size)
        view = (ctypes.c_ubyte * size).from_buffer(data)
        written = int(lib.llama_state_seq_get_data(self._ctx, view, size, 0))
        del view  # (a bytearray with a live view cannot be resized)
        if written < size:
            del data[written:]
        return Snapshot(tuple(self._tokens), data)

    def load_state(self, snapshot: Snapshot) -> None:
        lib = self._lib
        lib.llama_memory_clear(lib.llama_get_memory(self._ctx), True)
        self._tokens = []
        if not snapshot.tokens:
            return
        size = len(snapshot.data)
        if isinstance(snapshot.data, bytearray):  # read in place (llama.cpp only reads it)
            buffer = (ctypes.c_ubyte * size).from_buffer(snapshot.data)
        else:
            buffer = (ctypes.c_ubyte * size).from_buffer_copy(snapshot.data)
        if lib.llama_state_seq_set_data(self._ctx, buffer, size, 0) == 0:
            lib.llama_memory_clear(lib.llama_get_memory(self._ctx), True)  # refused: start empty
            return
        self._tokens = list(snapshot.tokens)

    def close(self) -> None:
        if getattr(self, "_batch", None) is not None:
            self._lib.llama_batch_free(self._batch)
            self._batch = None
        llm = getattr(self, "_llm", None)
        if llm is not None:
            with contextlib.suppress(Exception):
                llm.close()
            self._llm = None

    # -- internals ---------------------------------------------------------------------------
    def _piece(self, token: int) -> bytes:
        size = 32
        while True:
            buf = ctypes.create_string_buffer(size)
            n = self._lib.llama_token_to_piece(self._vocab, token, buf, size, 0, False)
            if n >= 0:
                return buf.raw[:n]
            size = -n

    def _fill_batch(self, chunk: Sequence[int], offset: int, logits_from: int) -> int:
        batch = self._batch
        token, pos, n_seq_id, seq_id, logits = self._batch_fields
        base = len(self._tokens)
        n_out = 0
        for i, t in enumerate(chunk):
            token[i] = t
            pos[i] = base + i
            n_seq_id[i] = 1
            seq_id[i][0] = 0
            wants = offset + i >= logits_from
            logits[i] = wants
            n_out += wants
        batch.n_tokens = len(chunk)
        return n_out

    def _special_ids(self) -> Iterator[tuple[str, int]]:
        for role in SPECIAL_ROLES:
            token = int(getattr(self._lib, f"llama_vocab_{role}")(self._vocab))
            if token >= 0:
                yield role, token

    def _read_info(self, file: Path) -> ModelInfo:
        lib, vocab, model = self._lib, self._vocab, self._model
        texts = hashlib.sha256()
        stop_ids = set()
        for token in range(self._n_vocab):
            texts.update(lib.llama_vocab_get_text(vocab, token) or b"")
            texts.update(b"\0")
            if lib.llama_vocab_is_eog(vocab, token):
                stop_ids.add(token)
        metadata: dict[str, Any] = dict(self._llm.metadata)
        arch = str(metadata.get("general.architecture", "unknown"))
        rollback = not (
            lib.llama_model_n_swa(model) > 0
            or lib.llama_model_is_recurrent(model)
            or lib.llama_model_is_hybrid(model)
        )
        return ModelInfo(
            path=str(file),
            name=str(metadata.get("general.name", file.stem)),
            architecture=arch,
            n_vocab=self._n_vocab,
            n_ctx_train=int(lib.llama_model_n_ctx_train(model)),
            special=dict(self._special_ids()),
            stop_ids=frozenset(stop_ids),
            supports_rollback=rollback,
            can_shift=rollback
            and bool(lib.llama_memory_can_shift(lib.llama_get_memory(self._ctx))),
            vocab_fingerprint=texts.hexdigest()[:16],
            add_bos=bool(lib.llama_vocab_get_add_bos(vocab)),
        )


def fix_malloc_threshold() -> None:
    """glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), after
    which the multi-megabyte KV snapshots of the state pool come from the heap and fragment it:
    the soak's RSS crept up ~20 MB a minute. A fixed threshold (which turns the adjustment off)
    keeps them in mmap, returned to the system when freed. Not glibc: nothing to do.

    Fixing it also fixes the trim threshold at its default, 128 KiB: the heap's top was then
    given back after each round and a row of logits (151,936 floats, 0.6 MB) copied into fresh
    pages, 0.2 ms a row against 0.01 (a pass of the 1.5B on a GPU takes 2.5 ms). The top is
    kept up to 64 MiB (a bound: the server's idle `malloc_trim` gives it back)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 4 << 20)  # M_MMAP_THRESHOLD = 4 MiB
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD = 64 MiB
    except (OSError, AttributeError):
        pass


def kv_cache_bytes(file: Path, n_ctx: int) -> int | None:
    """The f16 KV cache of an n_ctx context, from the GGUF header (None if it does not say)."""
    from spec_lsp.gguf_meta import GGUFFormatError, read_metadata

    try:
        arch = read_metadata(file, keep_arrays=()).get("general.architecture")
        kv_key = f"{arch}.attention.head_count_kv"
        meta = read_metadata(file, keep_arrays=(kv_key,))
    except (OSError, GGUFFormatError):
        return None
    kv_heads = meta.get(kv_key, meta.get(f"{arch}.attention.head_count"))
    if isinstance(kv_heads, list):  # per layer
        kv_heads = max(kv_heads, default=None)
    numbers: list[Any] = [
        meta.get(f"{arch}.block_count"),
        meta.get(f"{arch}.attention.head_count"),
        meta.get(f"{arch}.embedding_length"),
        kv_heads,
    ]
    if not all(isinstance(n, int) and n > 0 for n in numbers):
        return None
    layers, heads, embedding, kv_heads = numbers
    key = int(meta.get(f"{arch}.attention.key_length", embedding // heads))
    value = int(meta.get(f"{arch}.attention.value_length", key))
    return int(n_ctx * layers * kv_heads * (key + value) * 2)


def memory_available() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes (None where there is no such file)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_context_fits(file: Path, n_ctx: int, *, what: str) -> None:
    """Refuse a context whose KV cache alone exceeds the memory available: allocating it would
    fail, or, with overcommit, succeed and then bring in the OOM killer."""
    needed, available = kv_cache_bytes(file, n_ctx), memory_available()
    if needed is None or available is None or needed <= available:
        return
    fits = max(256, n_ctx * available // needed // 256 * 256)
    raise EngineError(
        f"a {n_ctx}-token context for {what} {file.name} needs {needed / 2**30:.1f} GiB for its "
        f"KV cache but only {available / 2**30:.1f} GiB of memory is available: lower "
        f"`contextSize` (about {fits} fits now)."
    )


# -- the build, and the probe's child process (engine/startup/crash_probe.py runs it) ------------------------
def system_info() -> str:
    """llama.cpp's own summary of the build: the CPU features compiled in (AVX2, AMX_INT8...),
    and the backends. Loads the libraries, not a model."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    return (raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)).strip()


def gpu_offload() -> bool:
    """Whether this build can offload layers to a GPU (CUDA, Metal, Vulkan...)."""
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


PROBE_TEXT = "def add(a, b):\n    return"


def probe_main(argv: Sequence[str]) -> int:
    """The probe's child: GPU_LAYERS MODEL... Says llama.cpp's system info first (so a crash
    still leaves it), then for each model `start`, loads it and decodes a prompt and a few
    single tokens (the shapes the server's first requests take), and says `ok` or `error`
    with the Python error. A native fault kills this process, not the server. Lines are
    tab-separated: `ok<TAB>path<TAB>seconds`."""
    import sys

    import llama_cpp

    def say(*words: object) -> None:
        sys.stdout.write("\t".join(str(w).replace("\t", " ").replace("\n", " ") for w in words))
        sys.stdout.write("\n")
        sys.stdout.flush()

    gpu_layers, paths = int(argv[0]), argv[1:]
    say("system_info", system_info())
    # one thread: with several, llama.cpp's threads spin at a barrier after every operation,
    # and beside a busy process (the editor, the server's own load) a few tokens took 10 s
    threads = 1
    for path in paths:
        say("start", path)
        start = time.perf_counter()
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                llm = llama_cpp.Llama(
                    model_path=path,
                    n_ctx=256,
                    n_batch=64,
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_gpu_layers=gpu_layers,
                    verbose=False,
                )
            tokens = llm.tokenize(PROBE_TEXT.encode())
            llm.eval(tokens)  # a prompt: a batch of rows
            for _ in range(3):  # then single rows, as decoding goes (the token does not matter)
                llm.eval(tokens[-1:])
            llm.close()
        except Exception as exc:  # (a Python error: the in-process load says it again)
            say("error", path, f"{type(exc).__name__}: {exc}")
            continue
        say("ok", path, f"{time.perf_counter() - start:.2f}")
    return 0
